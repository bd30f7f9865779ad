// The parameter store: registration and layout, the host generator of initial values, and the
// flat device buffers (master, gradient, working copy).
#include "memory_tags.hpp"
#include <gpu/blas/convert.hpp>
#include <gpu/detail/enum_names.hpp>
#include <gpu/detail/expects.hpp>
#include <gpu/nn/parameters.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <utility>

namespace gpu::nn {

constexpr gpu::detail::enum_name<initialization_kind> initialization_kind_names[] = {
    {initialization_kind::zeros, "zeros"},
    {initialization_kind::ones, "ones"},
    {initialization_kind::uniform, "uniform"}};
std::string_view to_string(initialization_kind kind) noexcept
{
    return gpu::detail::name_of(initialization_kind_names, kind);
}

initialization initialization::uniform(double bound)
{
    GPU_EXPECTS(std::isfinite(bound) && bound >= 0.0, std::invalid_argument,
                "gpu::nn::initialization::uniform: the bound ", bound,
                " is not a finite value >= 0");
    return {initialization_kind::uniform, bound};
}

initialization initialization::kaiming_uniform(std::int64_t fan_in, double a)
{
    GPU_EXPECTS(fan_in > 0, std::invalid_argument,
                "gpu::nn::initialization::kaiming_uniform: fan_in ", fan_in, " is not positive");
    GPU_EXPECTS(std::isfinite(a), std::invalid_argument,
                "gpu::nn::initialization::kaiming_uniform: the slope a is not finite");
    // torch.nn.init.kaiming_uniform_ with mode="fan_in", nonlinearity="leaky_relu":
    // gain = sqrt(2 / (1 + a²)), std = gain / sqrt(fan_in), bound = sqrt(3)·std.
    const double gain = std::sqrt(2.0 / (1.0 + a * a));
    return uniform(gain * std::sqrt(3.0 / static_cast<double>(fan_in)));
}

initialization initialization::fan_in_uniform(std::int64_t fan_in)
{
    GPU_EXPECTS(fan_in >= 0, std::invalid_argument,
                "gpu::nn::initialization::fan_in_uniform: fan_in ", fan_in, " is negative");
    return uniform(fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0);
}

namespace {

constexpr std::size_t max_rank = 8;

// The element count of a parameter's shape, checked.
std::size_t count_of(const std::string& name, const std::vector<std::int64_t>& shape)
{
    GPU_EXPECTS(!shape.empty() && shape.size() <= max_rank, std::invalid_argument,
                "gpu::nn::parameters::add: ", name, " has ", shape.size(), " dimensions; 1 to ",
                max_rank, " are allowed");
    std::size_t count = 1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        GPU_EXPECTS(shape[i] > 0, std::invalid_argument, "gpu::nn::parameters::add: dimension ", i,
                    " of ", name, " is ", shape[i], "; every dimension must be positive");
        const auto size = static_cast<std::size_t>(shape[i]);
        GPU_EXPECTS(count <= std::numeric_limits<std::size_t>::max() / size, std::invalid_argument,
                    "gpu::nn::parameters::add: the element count of ", name, " overflows");
        count *= size;
    }
    return count;
}

// `count` values of `init` from `engine`, written at `out` (see the header's notes).
void draw(const initialization& init, std::mt19937_64& engine, float* out, std::size_t count)
{
    switch (init.kind) {
    case initialization_kind::zeros: std::fill(out, out + count, 0.0F); return;
    case initialization_kind::ones: std::fill(out, out + count, 1.0F); return;
    case initialization_kind::uniform: break;
    }
    for (std::size_t i = 0; i < count; ++i) {
        const double u = static_cast<double>(engine() >> 11) * 0x1.0p-53; // [0, 1), 53 bits
        out[i] = static_cast<float>(init.bound * (2.0 * u - 1.0));
    }
}

} // namespace

parameters::parameters(mixed_precision precision) : precision_(precision)
{
    precision_.validate();
}

std::size_t parameters::add(std::string name, std::vector<std::int64_t> shape, initialization init)
{
    GPU_EXPECTS(!allocated_, std::logic_error, "gpu::nn::parameters::add: cannot register ", name,
                ": the store is allocated (register every parameter first)");
    GPU_EXPECTS(!name.empty(), std::invalid_argument,
                "gpu::nn::parameters::add: a parameter needs a name");
    GPU_EXPECTS(!find(name), std::invalid_argument, "gpu::nn::parameters::add: the name ", name,
                " is taken (parameter ", find(name).value_or(0), ")");
    GPU_EXPECTS(init.kind == initialization_kind::zeros || init.kind == initialization_kind::ones ||
                    (init.kind == initialization_kind::uniform && std::isfinite(init.bound) &&
                     init.bound >= 0),
                std::invalid_argument, "gpu::nn::parameters::add: the initialization of ", name,
                " (kind ", static_cast<int>(init.kind), ", bound ", init.bound, ") is not one");
    const std::size_t count = count_of(name, shape);
    // Each parameter starts at a multiple of alignment_elements (see the header).
    const std::size_t offset =
        (total_ + alignment_elements - 1) / alignment_elements * alignment_elements;
    GPU_EXPECTS(count <= std::numeric_limits<std::size_t>::max() - offset - alignment_elements,
                std::invalid_argument, "gpu::nn::parameters::add: the store's size overflows with ",
                name);
    infos_.push_back(parameter_info{std::move(name), std::move(shape), offset, count, init});
    total_ = offset + count;
    return infos_.size() - 1;
}

std::size_t parameters::parameter_elements() const noexcept
{
    std::size_t sum = 0;
    for (const parameter_info& p : infos_) {
        sum += p.count;
    }
    return sum;
}

std::optional<std::size_t> parameters::find(std::string_view name) const noexcept
{
    for (std::size_t i = 0; i < infos_.size(); ++i) {
        if (infos_[i].name == name) {
            return i;
        }
    }
    return std::nullopt;
}

std::size_t parameters::index_of(std::string_view name, const char* function) const
{
    const std::optional<std::size_t> index = find(name);
    GPU_EXPECTS(index.has_value(), std::invalid_argument, function, ": no parameter is named '",
                name, "' (the store has ", infos_.size(), ")");
    return *index;
}

const parameter_info& parameters::info(std::size_t index) const
{
    GPU_EXPECTS(index < infos_.size(), std::invalid_argument, "gpu::nn::parameters::info: index ",
                index, " is not below the ", infos_.size(), " parameters");
    return infos_[index];
}

const parameter_info& parameters::info(std::string_view name) const
{
    return infos_[index_of(name, "gpu::nn::parameters::info")];
}

void parameters::require_allocated(const char* function) const
{
    GPU_EXPECTS(allocated_, std::logic_error, function,
                ": the parameter store is not allocated (call allocate(stream) after registering)");
}

void parameters::allocate(stream_ref stream)
{
    GPU_EXPECTS(!allocated_, std::logic_error, "gpu::nn::parameters::allocate: already allocated");
    master_ = device_buffer<float>(total_, stream, detail::parameters_tag);
    gradient_ = device_buffer<float>(total_, stream, detail::gradients_tag);
    if (precision_.compute != element_type::fp32) {
        working_ = device_buffer<std::byte>(total_ * element_size(precision_.compute), stream,
                                            detail::working_copy_tag);
    }
    // Zeroed so that the padding is zero in every buffer from the start.
    master_.fill_zero_async(stream);
    gradient_.fill_zero_async(stream);
    working_.fill_zero_async(stream);
    allocated_ = true;
}

void* parameters::working_data() noexcept
{
    return precision_.compute == element_type::fp32 ? static_cast<void*>(master_.data())
                                                    : working_.data();
}

const void* parameters::working_data() const noexcept
{
    return precision_.compute == element_type::fp32 ? static_cast<const void*>(master_.data())
                                                    : working_.data();
}

parameter_view parameters::view(std::size_t index)
{
    const parameter_info& p = info(index);
    require_allocated("gpu::nn::parameters::view");
    auto* working =
        static_cast<std::byte*>(working_data()) + p.offset * element_size(precision_.compute);
    return {master_.data() + p.offset,
            gradient_.data() + p.offset,
            working,
            precision_.compute,
            p.offset,
            p.count,
            p.shape};
}

parameter_view parameters::view(std::string_view name)
{
    return view(index_of(name, "gpu::nn::parameters::view"));
}

std::vector<float> parameters::initial_values(std::uint64_t seed) const
{
    std::vector<float> values(total_, 0.0F);
    std::mt19937_64 engine(seed);
    for (const parameter_info& p : infos_) {
        draw(p.init, engine, values.data() + p.offset, p.count);
    }
    return values;
}

void parameters::initialize(std::uint64_t seed, stream_ref stream)
{
    require_allocated("gpu::nn::parameters::initialize");
    const std::vector<float> values = initial_values(seed);
    master_.copy_from_host_async(values, stream);
    refresh_working_copy(stream);
    stream.synchronize(); // `values` must outlive the copy
}

void parameters::zero_grad(stream_ref stream)
{
    require_allocated("gpu::nn::parameters::zero_grad");
    gradient_.fill_zero_async(stream);
}

void parameters::refresh_working_copy(stream_ref stream)
{
    require_allocated("gpu::nn::parameters::refresh_working_copy");
    if (precision_.compute == element_type::fp32 || total_ == 0) {
        return;
    }
    if (precision_.compute == element_type::fp16) {
        blas::convert(master_.data(), static_cast<__half*>(working_data()), total_, stream);
    } else {
        blas::convert(master_.data(), static_cast<__nv_bfloat16*>(working_data()), total_, stream);
    }
}

} // namespace gpu::nn
