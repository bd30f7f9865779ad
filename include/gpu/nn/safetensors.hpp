/// @file safetensors.hpp
/// @brief Checkpoints in the safetensors format (https://github.com/huggingface/safetensors),
/// the format that PyTorch users load with `safetensors.torch.load_file`.
///
/// A file is an 8-byte little-endian header length N, N bytes of UTF-8 JSON (each tensor's
/// name mapped to its `dtype`, `shape` and `data_offsets`, plus an optional `__metadata__`
/// object of strings), padded with spaces, then the tensors' bytes, little-endian and packed
/// without holes. docs/checkpoints.md describes the format, the errors and the Python side.
///
/// @code
/// std::vector<float> weight(64 * 3 * 3 * 3), bias(64);
/// const std::vector<gpu::nn::tensor_view> tensors{
///     gpu::nn::make_tensor_view("conv1.weight", weight, {64, 3, 3, 3}),
///     gpu::nn::make_tensor_view("conv1.bias", bias, {64}),
/// };
/// gpu::nn::write_safetensors("model.safetensors", tensors, {{"step", "1000"}});
///
/// const gpu::nn::safetensors_file file = gpu::nn::read_safetensors("model.safetensors");
/// const std::vector<float> w = file.values<float>("conv1.weight", {64, 3, 3, 3});
/// @endcode
///
/// Every read checks the whole file before it returns: a truncated, oversized or inconsistent
/// file is a `gpu::nn::format_error` naming the file and the bad field, never a read out of
/// bounds.
#pragma once

#include <gpu/element_type.hpp>
#include <gpu/nn/format_error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace gpu::nn {

/// @brief The element type of a stored tensor, as safetensors names it (`F32`, `BF16`, ...).
/// Only whole-byte types: the sub-byte `F4`, `F6_E2M3` and `F6_E3M2` are refused when read.
enum class dtype {
    boolean, ///< `BOOL`: one byte, 0 or 1 (`torch.bool`)
    u8,      ///< `U8`
    i8,      ///< `I8`
    f8_e5m2, ///< `F8_E5M2` (`torch.float8_e5m2`)
    f8_e4m3, ///< `F8_E4M3` (`torch.float8_e4m3fn`)
    f8_e8m0, ///< `F8_E8M0` (`torch.float8_e8m0fnu`)
    i16,     ///< `I16`
    u16,     ///< `U16`
    f16,     ///< `F16`: IEEE half precision (`torch.float16`)
    bf16,    ///< `BF16`: bfloat16 (`torch.bfloat16`)
    i32,     ///< `I32`
    u32,     ///< `U32`
    f32,     ///< `F32` (`torch.float32`)
    f64,     ///< `F64` (`torch.float64`)
    i64,     ///< `I64` (`torch.int64`)
    u64,     ///< `U64`
    c64,     ///< `C64`: two `F32`, real then imaginary (`torch.complex64`)
};

/// @brief The name safetensors gives @p type (`F32`, `BF16`, `BOOL`, ...); `unknown` for a
/// value outside the enumeration.
[[nodiscard]] std::string_view to_string(dtype type) noexcept;

/// @brief The dtype that safetensors names @p name (exactly, upper case); nothing for a name
/// it does not have or a sub-byte type cudagap does not read.
[[nodiscard]] std::optional<dtype> parse_dtype(std::string_view name) noexcept;

/// @brief Bytes per element (1, 2, 4 or 8); 0 for a value outside the enumeration.
[[nodiscard]] std::size_t element_size(dtype type) noexcept;

/// @brief The dtype of the core's floating-point `element_type` (FP32 -> `f32`, FP16 ->
/// `f16`, ...), for device buffers described by one.
/// @throws std::invalid_argument for a value outside the enumeration
[[nodiscard]] dtype to_dtype(gpu::element_type type);

namespace detail {

/// @brief The dtype that stores a C++ `T` exactly, if any (`float` -> `f32`; `std::int64_t` ->
/// `i64`, ...). FP16 and BF16 have no C++20 type: read and write them as `std::uint16_t` bits
/// with the dtype named.
template <class T>
constexpr std::optional<dtype> dtype_for() noexcept
{
    if constexpr (std::is_same_v<T, bool>) {
        return dtype::boolean;
    } else if constexpr (std::is_same_v<T, std::uint8_t>) {
        return dtype::u8;
    } else if constexpr (std::is_same_v<T, std::int8_t>) {
        return dtype::i8;
    } else if constexpr (std::is_same_v<T, std::int16_t>) {
        return dtype::i16;
    } else if constexpr (std::is_same_v<T, std::uint16_t>) {
        return dtype::u16;
    } else if constexpr (std::is_same_v<T, std::int32_t>) {
        return dtype::i32;
    } else if constexpr (std::is_same_v<T, std::uint32_t>) {
        return dtype::u32;
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
        return dtype::i64;
    } else if constexpr (std::is_same_v<T, std::uint64_t>) {
        return dtype::u64;
    } else if constexpr (std::is_same_v<T, float>) {
        return dtype::f32;
    } else if constexpr (std::is_same_v<T, double>) {
        return dtype::f64;
    } else {
        return std::nullopt;
    }
}

} // namespace detail

/// @brief A C++ type whose values a checkpoint stores as they are: `bool`, the fixed-width
/// integers, `float` and `double`.
template <class T>
concept checkpoint_value = detail::dtype_for<T>()
.has_value();

/// @brief The dtype that stores `T` (`dtype_of<float>` is `dtype::f32`).
template <checkpoint_value T>
inline constexpr dtype dtype_of = *detail::dtype_for<T>();

/// @brief One tensor of a checkpoint: its name, dtype, shape and bytes (row-major,
/// little-endian). A view: it owns no data. Written by `write_safetensors`, given by
/// `safetensors_file::tensors()` (its `data` then points into the file's buffer).
///
/// A shape `{}` is a scalar (one element); a shape with a 0 holds no data.
struct tensor_view {
    std::string name{};                ///< unique in its file; not `__metadata__`
    dtype type = dtype::f32;           ///< the element type
    std::vector<std::size_t> shape{};  ///< dimensions, outermost first (PyTorch's `size()`)
    std::span<const std::byte> data{}; ///< product(shape) * element_size(type) bytes
};

/// @brief A view of @p values (any contiguous range of a `checkpoint_value`: a
/// `std::vector<float>`, a `std::span<const std::int64_t>`, ...) as the tensor @p name of shape
/// @p shape. The view refers to @p values, which must outlive it (a temporary container is
/// refused at compile time). Sizes are checked when the tensor is written.
template <std::ranges::contiguous_range Range>
requires checkpoint_value<std::remove_cv_t<std::ranges::range_value_t<Range>>> &&
    (std::is_lvalue_reference_v<Range> || std::ranges::borrowed_range<Range>)
        [[nodiscard]] tensor_view
    make_tensor_view(std::string name, Range&& values, std::vector<std::size_t> shape)
{
    using value_type = std::remove_cv_t<std::ranges::range_value_t<Range>>;
    return tensor_view{
        .name = std::move(name),
        .type = dtype_of<value_type>,
        .shape = std::move(shape),
        .data = std::as_bytes(std::span(std::ranges::data(values), std::ranges::size(values)))};
}

/// @brief A checkpoint's `__metadata__`: free-form strings (safetensors allows nothing else
/// there), such as `{"format": "pt"}` or a training step.
using safetensors_metadata = std::map<std::string, std::string, std::less<>>;

/// @brief The largest header cudagap writes or reads: 100,000,000 bytes, the limit of the
/// reference implementation, which refuses a larger one as a likely attack.
inline constexpr std::uint64_t safetensors_max_header_bytes = 100'000'000;

/// @brief A checkpoint read into memory and checked: its tensors, each a view into a buffer
/// the object owns, and its metadata. Move-only (the views point into its own buffer).
class safetensors_file {
public:
    /// @brief An empty checkpoint: no tensors, no metadata.
    safetensors_file() = default;
    safetensors_file(const safetensors_file&) = delete;
    safetensors_file& operator=(const safetensors_file&) = delete;
    /// @brief Takes @p other's buffer; the views stay valid (a moved `std::vector` keeps its
    /// storage). @post @p other is empty.
    safetensors_file(safetensors_file&& other) noexcept { swap(other); }
    /// @brief Takes @p other's buffer by swapping. @post @p other holds what this held.
    safetensors_file& operator=(safetensors_file&& other) noexcept
    {
        swap(other);
        return *this;
    }
    ~safetensors_file() = default;

    /// @brief The path read, or the label given to `parse_safetensors`.
    [[nodiscard]] const std::string& source() const noexcept { return source_; }

    /// @brief The `__metadata__` strings (empty when the file has none).
    [[nodiscard]] const safetensors_metadata& metadata() const noexcept { return metadata_; }

    /// @brief Every tensor, in the order of its data in the file.
    [[nodiscard]] std::span<const tensor_view> tensors() const noexcept { return tensors_; }

    /// @brief The tensor called @p name, or null when there is none.
    [[nodiscard]] const tensor_view* find(std::string_view name) const noexcept;

    /// @brief The tensor called @p name.
    /// @throws format_error naming the file and the tensor when there is none
    [[nodiscard]] const tensor_view& at(std::string_view name) const;

    /// @brief The tensor called @p name, checked to be of dtype @p type and shape @p shape:
    /// what loading a parameter of a model needs.
    /// @throws format_error naming the file and the tensor, with the dtype and shape expected and
    ///   found (a checkpoint of another model or size), or when there is no such tensor
    [[nodiscard]] const tensor_view& expect(std::string_view name, dtype type,
                                            const std::vector<std::size_t>& shape) const;

    /// @brief A copy of the values of the tensor @p name, of dtype @p type and shape @p shape,
    /// as `T`s of the same size (`std::uint16_t` for the bits of `f16` and `bf16`). A copy, so
    /// that the file's alignment never matters.
    /// @throws std::invalid_argument when `sizeof(T)` differs from `element_size(type)`
    /// @throws format_error as `expect()`
    template <class T>
    requires std::is_trivially_copyable_v<T> &&(!std::is_same_v<T, bool>)
        [[nodiscard]] std::vector<T> values(std::string_view name, dtype type,
                                            const std::vector<std::size_t>& shape) const
    {
        if (sizeof(T) != element_size(type)) {
            throw std::invalid_argument("gpu::nn::safetensors_file::values: a " +
                                        std::to_string(sizeof(T)) + "-byte type cannot hold " +
                                        std::string(to_string(type)) + " elements");
        }
        const std::span<const std::byte> bytes = expect(name, type, shape).data;
        std::vector<T> out(bytes.size() / sizeof(T));
        if (!bytes.empty()) {
            std::memcpy(out.data(), bytes.data(), bytes.size());
        }
        return out;
    }

    /// @brief A copy of the values of the tensor @p name, whose dtype must be `dtype_of<T>` and
    /// whose shape must be @p shape (`file.values<float>("fc.weight", {10, 128})`); a `BOOL`
    /// tensor reads as `bool` (any non-zero byte is true).
    /// @throws format_error as `expect()`
    template <checkpoint_value T>
    [[nodiscard]] std::vector<T> values(std::string_view name,
                                        const std::vector<std::size_t>& shape) const
    {
        if constexpr (std::is_same_v<T, bool>) {
            const std::span<const std::byte> bytes = expect(name, dtype::boolean, shape).data;
            std::vector<bool> out(bytes.size());
            for (std::size_t i = 0; i < bytes.size(); ++i) {
                out[i] = bytes[i] != std::byte{0};
            }
            return out;
        } else {
            return values<T>(name, dtype_of<T>, shape);
        }
    }

private:
    friend safetensors_file parse_safetensors(std::vector<std::byte> bytes, std::string source);

    void swap(safetensors_file& other) noexcept
    {
        source_.swap(other.source_);
        bytes_.swap(other.bytes_);
        metadata_.swap(other.metadata_);
        tensors_.swap(other.tensors_);
        index_.swap(other.index_);
    }

    std::string source_;
    std::vector<std::byte> bytes_; // the whole file: the views point into it
    safetensors_metadata metadata_;
    std::vector<tensor_view> tensors_;                      // in data order
    std::map<std::string, std::size_t, std::less<>> index_; // name -> position in tensors_
};

/// @brief The bytes of a safetensors file holding @p tensors, in the order given (their data
/// packed in that order), and @p metadata (left out of the header when empty).
/// @throws std::invalid_argument naming the tensor when a name is `__metadata__` (reserved by
///   the format), repeated or not UTF-8, a dtype is not a named enumerator, a shape's size
///   overflows, or a tensor's data is not product(shape) * element_size bytes; when a metadata
///   string is not UTF-8; when the header would pass `safetensors_max_header_bytes`
[[nodiscard]] std::vector<std::byte>
serialize_safetensors(std::span<const tensor_view> tensors,
                      const safetensors_metadata& metadata = {});

/// @brief Writes @p tensors and @p metadata to @p path as a safetensors file, atomically: into a
/// new temporary file in the same folder, flushed to the disk (`fsync`), then renamed over
/// @p path. A crash or an error leaves either the old file or the new one, never half of one;
/// the temporary file is removed on every error (only a process killed during the write leaves
/// it, named `<path>.tmp<pid>.<n>`).
/// @throws std::invalid_argument as `serialize_safetensors`, before anything is created
/// @throws std::filesystem::filesystem_error when the temporary file cannot be created, written,
///   flushed or renamed (a missing or read-only folder, a full disk, @p path a folder)
void write_safetensors(const std::filesystem::path& path, std::span<const tensor_view> tensors,
                       const safetensors_metadata& metadata = {});

/// @brief Reads and checks the safetensors file @p path.
/// @throws std::filesystem::filesystem_error when it cannot be opened or read
/// @throws format_error naming @p path and the bad field when it breaks the format: a header
///   length past the file or over `safetensors_max_header_bytes`, JSON that is not the format's
///   (bad syntax or UTF-8, a missing, repeated or unknown field, a negative or non-integer
///   number), an unknown dtype, a shape whose size overflows, data offsets out of the data,
///   overlapping, leaving holes or not matching dtype and shape, a repeated tensor name
[[nodiscard]] safetensors_file read_safetensors(const std::filesystem::path& path);

/// @brief Checks @p bytes, a whole safetensors file already in memory, and keeps them.
/// @param bytes the whole file, moved into the result (no copy)
/// @param source what errors call the bytes (a path, a URL, `<memory>`)
/// @throws format_error as `read_safetensors`, naming @p source
[[nodiscard]] safetensors_file parse_safetensors(std::vector<std::byte> bytes,
                                                 std::string source = "<memory>");

} // namespace gpu::nn
