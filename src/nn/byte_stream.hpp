// Private to cudagap_nn: the bytes of a file read front to back, as they are or through gzip
// (zlib's inflate), so that the IDX reader is written once for both.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace gpu::nn::detail {

/// Bytes read front to back.
class byte_stream {
public:
    byte_stream() = default;
    byte_stream(const byte_stream&) = delete;
    byte_stream& operator=(const byte_stream&) = delete;
    virtual ~byte_stream() = default;

    /// Fills @p out from the stream; returns how many bytes it got, fewer than asked only at
    /// the end of the stream.
    /// @throws gpu::nn::format_error when the stream is corrupted or cut short (gzip)
    virtual std::size_t read(std::span<std::byte> out) = 0;
};

/// Whether @p bytes start with gzip's magic bytes (1f 8b).
[[nodiscard]] bool is_gzip(std::span<const std::byte> bytes) noexcept;

/// Whether this build has zlib, and so reads gzip.
[[nodiscard]] bool have_zlib() noexcept;

/// The stream of @p bytes as they are (which must outlive it).
[[nodiscard]] std::unique_ptr<byte_stream> raw_stream(std::span<const std::byte> bytes);

/// The decompressed stream of @p bytes, a gzip file (which must outlive it). Reads every
/// member of a multi-member file, as gunzip does; checks each member's CRC and length.
/// @throws gpu::nn::format_error naming @p source when this build has no zlib (saying how to
///   get it), and from read() when the data is corrupted, cut short or followed by bytes that
///   are not gzip
[[nodiscard]] std::unique_ptr<byte_stream> gzip_stream(std::span<const std::byte> bytes,
                                                       const std::string& source);

} // namespace gpu::nn::detail
