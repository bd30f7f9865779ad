/// @file parameters.hpp
/// @brief `gpu::nn::parameters`: a model's named parameters in ONE flat FP32 master buffer and
/// ONE flat FP32 gradient buffer (what the optimizer, the grad scaler and checkpoints work on),
/// plus a working copy in the compute precision that the layers read; and
/// `gpu::nn::initialization`, PyTorch's default initialisations from a seed.
///
/// @code
/// gpu::nn::parameters store(gpu::nn::mixed_precision::fp16());
/// gpu::nn::linear fc(store, "fc", 784, 10);             // registers fc.weight, fc.bias
/// store.allocate(stream);                               // master, gradients (zeroed), FP16 copy
/// store.initialize(42, stream);                         // Kaiming-uniform from seed 42
/// // ... forward, backward (gradients accumulate into store.gradient_data()) ...
/// // optimizer step on store.master_data() / store.gradient_data(), then:
/// store.refresh_working_copy(stream);                   // one cast kernel, FP32 -> FP16
/// store.zero_grad(stream);
/// @endcode
///
/// **Layout.** Parameters lie in registration order, each starting at a multiple of
/// `alignment_elements` (128) elements: 512 bytes in the FP32 buffers, 256 in the FP16/BF16
/// working copy, the alignment cuBLASLt's heuristic assumes and vectorised kernels want. The
/// padding between parameters is zero in all three buffers and stays zero under AdamW (a zero
/// gradient on a zero weight leaves it zero), so kernels may run over the flat buffers whole.
///
/// **Initial values** are generated on the host by `std::mt19937_64` seeded with the seed (its
/// output sequence is fixed by the C++ standard, so every platform gets the same values), then
/// copied to the device once. Parameters draw in registration order; a uniform one draws one
/// 64-bit number per element and maps its top 53 bits `u ∈ [0, 1)` to `bound·(2u − 1)` in
/// double precision, rounded once to FP32; zeros and ones draw nothing. The distributions are
/// PyTorch's, the values are not: PyTorch's generator (Philox on the GPU, its own MT19937 on the
/// CPU) and its sampling differ, so a model initialised here with seed 42 does not hold the
/// numbers `torch.manual_seed(42)` gives.
///
/// **CUDA graphs.** `zero_grad` (a memset) and `refresh_working_copy` (one kernel) are
/// stream-ordered and capturable; `allocate` and `initialize` happen once, before capture
/// (`initialize` waits for its copy).
#pragma once

#include <gpu/device_buffer.hpp>
#include <gpu/nn/mixed_precision.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::nn {

/// @brief How a parameter's initial values are drawn.
enum class initialization_kind {
    zeros,   ///< all 0
    ones,    ///< all 1
    uniform, ///< uniform in [-bound, bound]
};

/// @brief `zeros`, `ones` or `uniform`; `unknown` outside the enumeration.
[[nodiscard]] std::string_view to_string(initialization_kind kind) noexcept;

/// @brief A parameter's initialisation. Plain data; the factories give PyTorch's defaults.
struct initialization {
    initialization_kind kind = initialization_kind::zeros; ///< the distribution
    double bound = 0.0; ///< for `uniform`: values lie in [-bound, bound]

    /// @brief All zeros.
    [[nodiscard]] static constexpr initialization zeros() noexcept
    {
        return {initialization_kind::zeros, 0.0};
    }
    /// @brief All ones.
    [[nodiscard]] static constexpr initialization ones() noexcept
    {
        return {initialization_kind::ones, 0.0};
    }
    /// @brief Uniform in [-bound, bound].
    /// @throws std::invalid_argument when @p bound is negative or not finite
    [[nodiscard]] static initialization uniform(double bound);
    /// @brief `torch.nn.init.kaiming_uniform_(w, a)` for a weight with @p fan_in inputs per output:
    /// gain `sqrt(2 / (1 + a²))`, bound `gain·sqrt(3 / fan_in)`. With PyTorch's default
    /// `a = sqrt(5)` (what `nn.Linear` and `nn.Conv2d` use) the bound is `1 / sqrt(fan_in)`.
    /// @param fan_in inputs per output: `in_features` of a linear layer, `in_channels / groups ·
    /// kernel height · kernel width` of a convolution
    /// @param a the negative slope of the rectifier the gain is computed for
    /// @throws std::invalid_argument when @p fan_in is not positive or @p a is not finite
    [[nodiscard]] static initialization kaiming_uniform(std::int64_t fan_in,
                                                        double a = 2.23606797749979);
    /// @brief The default bias of `nn.Linear` and `nn.Conv2d`: uniform in
    /// `[-1/sqrt(fan_in), 1/sqrt(fan_in)]`, zeros when @p fan_in is 0 (as PyTorch).
    /// @throws std::invalid_argument when @p fan_in is negative
    [[nodiscard]] static initialization fan_in_uniform(std::int64_t fan_in);

    /// @brief Initialisations compare member by member.
    friend constexpr bool operator==(const initialization&, const initialization&) = default;
};

/// @brief What the store knows about one registered parameter (host data only).
struct parameter_info {
    std::string name{};                ///< e.g. `fc1.weight`
    std::vector<std::int64_t> shape{}; ///< e.g. `{128, 784}` (out, in)
    std::size_t offset = 0;            ///< index of its first element in the flat buffers
    std::size_t count = 0;             ///< its elements: the product of `shape`
    initialization init{};             ///< how `initialize` draws it
};

/// @brief One parameter's place on the device: what layers, optimizers and checkpoints use.
struct parameter_view {
    float* master = nullptr;   ///< the FP32 master values, `count` of them
    float* gradient = nullptr; ///< the FP32 gradient, `count` elements
    void* working = nullptr;   ///< the values in `working_type` (`master` itself for FP32)
    element_type working_type = element_type::fp32; ///< the compute precision
    std::size_t offset = 0;                ///< index of the first element in the flat buffers
    std::size_t count = 0;                 ///< elements
    std::span<const std::int64_t> shape{}; ///< the shape, held by the store
};

/// @brief A model's parameters: registered by name and shape (layers do it in their
/// constructors), then allocated once as flat buffers.
///
/// Neither copyable nor movable: layers keep a reference to the store they registered in, which
/// a move would leave dangling. Make it where it lives for the model's lifetime.
class parameters {
public:
    /// @brief Elements between the starts of consecutive parameters are a multiple of this.
    static constexpr std::size_t alignment_elements = 128;

    /// @brief An empty store whose working copy is in @p precision's compute type.
    /// @throws std::invalid_argument as `mixed_precision::validate`
    explicit parameters(mixed_precision precision = {});

    /// @brief Registers a parameter after the others; returns its index.
    /// @param name unique, not empty (PyTorch's `state_dict` key, e.g. `fc1.weight`)
    /// @param shape 1 to 8 positive dimensions
    /// @param init how `initialize` draws it
    /// @throws std::invalid_argument for an empty or taken name, a bad shape, or an element
    /// count that overflows (values named)
    /// @throws std::logic_error once the store is allocated (its buffers have their size)
    std::size_t add(std::string name, std::vector<std::int64_t> shape, initialization init);

    /// @brief The policy the store was made for.
    [[nodiscard]] mixed_precision precision() const noexcept { return precision_; }
    /// @brief The number of registered parameters.
    [[nodiscard]] std::size_t size() const noexcept { return infos_.size(); }
    /// @brief Elements of each flat buffer, padding included.
    [[nodiscard]] std::size_t total_elements() const noexcept { return total_; }
    /// @brief Elements of the parameters themselves (what PyTorch's `sum(p.numel())` says).
    [[nodiscard]] std::size_t parameter_elements() const noexcept;
    /// @brief Every parameter, in registration (and memory) order.
    [[nodiscard]] const std::vector<parameter_info>& infos() const noexcept { return infos_; }
    /// @brief The parameter registered as @p index.
    /// @throws std::invalid_argument when @p index is not below `size()`
    [[nodiscard]] const parameter_info& info(std::size_t index) const;
    /// @brief The parameter named @p name.
    /// @throws std::invalid_argument when no parameter has that name
    [[nodiscard]] const parameter_info& info(std::string_view name) const;
    /// @brief The index of the parameter named @p name, if any.
    [[nodiscard]] std::optional<std::size_t> find(std::string_view name) const noexcept;

    /// @brief Allocates the master, gradient and working buffers on @p stream (ordered there,
    /// freed there: the store must not outlive the stream) and zeroes all three (queued, not
    /// waited for). Registration is closed from then on.
    /// @throws std::logic_error when already allocated
    /// @throws gpu::out_of_memory, gpu::cuda_error from the allocation
    void allocate(stream_ref stream);
    /// @brief Whether `allocate` has run.
    [[nodiscard]] bool allocated() const noexcept { return allocated_; }

    /// @brief The device pointers and place of parameter @p index.
    /// @throws std::invalid_argument when @p index is not below `size()`
    /// @throws std::logic_error before `allocate`
    [[nodiscard]] parameter_view view(std::size_t index);
    /// @brief The device pointers and place of the parameter named @p name.
    /// @throws std::invalid_argument for an unknown name; std::logic_error before `allocate`
    [[nodiscard]] parameter_view view(std::string_view name);

    /// @brief The flat FP32 master buffer (`total_elements()` long after `allocate`).
    [[nodiscard]] device_buffer<float>& master() noexcept { return master_; }
    /// @brief The flat FP32 master buffer.
    [[nodiscard]] const device_buffer<float>& master() const noexcept { return master_; }
    /// @brief The flat FP32 gradient buffer.
    [[nodiscard]] device_buffer<float>& gradient() noexcept { return gradient_; }
    /// @brief The flat FP32 gradient buffer.
    [[nodiscard]] const device_buffer<float>& gradient() const noexcept { return gradient_; }
    /// @brief The flat working copy in the compute type: the master itself for FP32.
    [[nodiscard]] void* working_data() noexcept;
    /// @brief The flat working copy in the compute type: the master itself for FP32.
    [[nodiscard]] const void* working_data() const noexcept;

    /// @brief The initial contents of the master buffer for @p seed (see the file's notes):
    /// `total_elements()` values, padding zero. Host only; deterministic.
    [[nodiscard]] std::vector<float> initial_values(std::uint64_t seed) const;

    /// @brief Fills the master buffer with `initial_values(seed)` (one copy, which this call
    /// waits for) and refreshes the working copy. Once, before training; not capturable.
    /// @throws std::logic_error before `allocate`
    void initialize(std::uint64_t seed, stream_ref stream);

    /// @brief Sets every gradient to zero on @p stream (`optimizer.zero_grad(set_to_none=False)`);
    /// one memset, capturable.
    /// @throws std::logic_error before `allocate`
    void zero_grad(stream_ref stream);

    /// @brief Recomputes the working copy from the master buffer on @p stream: one cast kernel
    /// over the flat buffer (`gpu::blas::convert`, rounding to nearest even), after each optimizer
    /// step. Does nothing for FP32, whose working copy is the master. Capturable.
    /// @throws std::logic_error before `allocate`
    void refresh_working_copy(stream_ref stream);

    parameters(parameters&&) = delete;
    parameters& operator=(parameters&&) = delete;
    parameters(const parameters&) = delete;
    parameters& operator=(const parameters&) = delete;
    /// @brief Frees the buffers on their stream.
    ~parameters() = default;

private:
    void require_allocated(const char* function) const;
    [[nodiscard]] std::size_t index_of(std::string_view name, const char* function) const;

    mixed_precision precision_{};
    std::vector<parameter_info> infos_;
    std::size_t total_ = 0;
    bool allocated_ = false;
    device_buffer<float> master_;
    device_buffer<float> gradient_;
    device_buffer<std::byte> working_; // empty for FP32
};

} // namespace gpu::nn
