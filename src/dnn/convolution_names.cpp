// The names of the convolution enums (passes, algorithms, epilogues, executions, gradient
// updates): one table each, which to_string reads.
#include "translate.hpp"

#include <gpu/detail/enum_names.hpp>
#include <gpu/dnn/convolution_planning.hpp>

#include <string_view>

namespace gpu::dnn {

constexpr gpu::detail::enum_name<convolution_pass> convolution_pass_names[] = {
    {convolution_pass::forward, "forward"},
    {convolution_pass::backward_data, "backward_data"},
    {convolution_pass::backward_filter, "backward_filter"}};
std::string_view to_string(convolution_pass pass) noexcept
{
    return gpu::detail::name_of(convolution_pass_names, pass);
}

constexpr gpu::detail::enum_name<convolution_algorithm> convolution_algorithm_names[] = {
    {convolution_algorithm::implicit_gemm, "implicit_gemm"},
    {convolution_algorithm::implicit_precomp_gemm, "implicit_precomp_gemm"},
    {convolution_algorithm::gemm, "gemm"},
    {convolution_algorithm::direct, "direct"},
    {convolution_algorithm::fft, "fft"},
    {convolution_algorithm::fft_tiling, "fft_tiling"},
    {convolution_algorithm::winograd, "winograd"},
    {convolution_algorithm::winograd_nonfused, "winograd_nonfused"}};
std::string_view to_string(convolution_algorithm algorithm) noexcept
{
    return gpu::detail::name_of(convolution_algorithm_names, algorithm);
}

constexpr gpu::detail::enum_name<backward_data_algorithm> backward_data_algorithm_names[] = {
    {backward_data_algorithm::algo_0, "algo_0"},
    {backward_data_algorithm::algo_1, "algo_1"},
    {backward_data_algorithm::fft, "fft"},
    {backward_data_algorithm::fft_tiling, "fft_tiling"},
    {backward_data_algorithm::winograd, "winograd"},
    {backward_data_algorithm::winograd_nonfused, "winograd_nonfused"}};
std::string_view to_string(backward_data_algorithm algorithm) noexcept
{
    return gpu::detail::name_of(backward_data_algorithm_names, algorithm);
}

constexpr gpu::detail::enum_name<backward_filter_algorithm> backward_filter_algorithm_names[] = {
    {backward_filter_algorithm::algo_0, "algo_0"},
    {backward_filter_algorithm::algo_1, "algo_1"},
    {backward_filter_algorithm::fft, "fft"},
    {backward_filter_algorithm::algo_3, "algo_3"},
    {backward_filter_algorithm::winograd, "winograd"},
    {backward_filter_algorithm::winograd_nonfused, "winograd_nonfused"},
    {backward_filter_algorithm::fft_tiling, "fft_tiling"}};
std::string_view to_string(backward_filter_algorithm algorithm) noexcept
{
    return gpu::detail::name_of(backward_filter_algorithm_names, algorithm);
}

std::string_view to_string(convolution_epilogue epilogue) noexcept
{
    return gpu::detail::name_of(detail::names<convolution_epilogue>, epilogue);
}

constexpr gpu::detail::enum_name<epilogue_execution> epilogue_execution_names[] = {
    {epilogue_execution::none, "none"},
    {epilogue_execution::fused, "fused"},
    {epilogue_execution::unfused, "unfused"}};
std::string_view to_string(epilogue_execution execution) noexcept
{
    return gpu::detail::name_of(epilogue_execution_names, execution);
}

std::string_view to_string(gradient_update update) noexcept
{
    return gpu::detail::name_of(detail::names<gradient_update>, update);
}

} // namespace gpu::dnn
