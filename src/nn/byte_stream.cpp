// Raw and gzip byte streams for the IDX reader (see byte_stream.hpp). zlib is optional: without
// it (CUDAGAP_NN_HAVE_ZLIB is 0) a gzip file is a clear error, and raw files still read.
#include "byte_stream.hpp"

#include <gpu/nn/format_error.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#if CUDAGAP_NN_HAVE_ZLIB
#define ZLIB_CONST // next_in is a pointer to const: the input is never written
#include <zlib.h>
#endif

namespace gpu::nn::detail {
namespace {

class memory_stream final : public byte_stream {
public:
    explicit memory_stream(std::span<const std::byte> bytes) noexcept : bytes_(bytes) {}

    std::size_t read(std::span<std::byte> out) override
    {
        const std::size_t count = std::min(out.size(), bytes_.size());
        if (count > 0) {
            std::memcpy(out.data(), bytes_.data(), count);
        }
        bytes_ = bytes_.subspan(count);
        return count;
    }

private:
    std::span<const std::byte> bytes_;
};

#if CUDAGAP_NN_HAVE_ZLIB

class inflate_stream final : public byte_stream {
public:
    inflate_stream(std::span<const std::byte> bytes, std::string source)
        : input_(bytes), source_(std::move(source))
    {
        // 16 + MAX_WBITS: a gzip wrapper, whose CRC-32 and length zlib checks at the end.
        const int status = inflateInit2(&z_, 16 + MAX_WBITS);
        if (status == Z_MEM_ERROR) {
            throw std::bad_alloc();
        }
        if (status != Z_OK) {
            throw format_error(source_, "gzip",
                               std::string("zlib cannot start: ") + zError(status));
        }
    }
    inflate_stream(const inflate_stream&) = delete;
    inflate_stream& operator=(const inflate_stream&) = delete;
    ~inflate_stream() override { inflateEnd(&z_); }

    std::size_t read(std::span<std::byte> out) override
    {
        std::size_t produced = 0;
        while (produced < out.size() && !finished_) {
            feed();
            const std::size_t want =
                std::min<std::size_t>(out.size() - produced, std::numeric_limits<uInt>::max());
            z_.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
            z_.avail_out = static_cast<uInt>(want);
            const int status = inflate(&z_, Z_NO_FLUSH);
            produced += want - z_.avail_out;
            if (status == Z_STREAM_END) {
                end_of_member();
            } else if (status == Z_BUF_ERROR && z_.avail_in == 0 && input_.empty()) {
                throw format_error(source_, "gzip",
                                   "the compressed data ends early (truncated file)");
            } else if (status == Z_MEM_ERROR) {
                throw std::bad_alloc();
            } else if (status != Z_OK) {
                throw format_error(source_, "gzip",
                                   std::string("corrupted compressed data (zlib: ") +
                                       (z_.msg != nullptr ? z_.msg : zError(status)) + ")");
            }
        }
        return produced;
    }

private:
    // zlib counts its input in 32 bits: give it the file a piece at a time.
    void feed() noexcept
    {
        if (z_.avail_in == 0 && !input_.empty()) {
            const std::size_t piece =
                std::min<std::size_t>(input_.size(), std::numeric_limits<uInt>::max());
            z_.next_in = reinterpret_cast<const Bytef*>(input_.data());
            z_.avail_in = static_cast<uInt>(piece);
            input_ = input_.subspan(piece);
        }
    }

    // After a member's end (its CRC and length checked): the end, another member, or garbage.
    void end_of_member()
    {
        const std::size_t left = z_.avail_in + input_.size();
        if (left == 0) {
            finished_ = true;
            return;
        }
        // What is left lies in one piece: the unread part of the current input, then the rest.
        const std::span<const std::byte> rest(reinterpret_cast<const std::byte*>(z_.next_in), left);
        if (!is_gzip(rest)) {
            throw format_error(source_, "gzip",
                               std::to_string(left) +
                                   " bytes after the end of the compressed data are not gzip");
        }
        if (inflateReset(&z_) != Z_OK) {
            throw format_error(source_, "gzip", "zlib cannot start the next member");
        }
    }

    z_stream z_{};
    std::span<const std::byte> input_; // not given to zlib yet
    std::string source_;
    bool finished_ = false;
};

#endif

} // namespace

bool is_gzip(std::span<const std::byte> bytes) noexcept
{
    return bytes.size() >= 2 && bytes[0] == std::byte{0x1F} && bytes[1] == std::byte{0x8B};
}

bool have_zlib() noexcept
{
    return CUDAGAP_NN_HAVE_ZLIB != 0;
}

std::unique_ptr<byte_stream> raw_stream(std::span<const std::byte> bytes)
{
    return std::make_unique<memory_stream>(bytes);
}

std::unique_ptr<byte_stream> gzip_stream(std::span<const std::byte> bytes,
                                         const std::string& source)
{
#if CUDAGAP_NN_HAVE_ZLIB
    return std::make_unique<inflate_stream>(bytes, source);
#else
    static_cast<void>(bytes);
    throw format_error(
        source, "gzip",
        "the file is gzip-compressed, and this cudagap was built without zlib: gunzip the file, "
        "or install zlib (apt-get install zlib1g-dev) and rebuild cudagap");
#endif
}

} // namespace gpu::nn::detail
