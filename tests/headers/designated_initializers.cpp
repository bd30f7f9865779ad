// Compiled, never run: every aggregate of the public headers filled with designated initializers
// the way a user writes them, under -Wall -Wextra -Wpedantic -Werror (g++ in the build, clang++
// in the test "headers: designated initializers under clang++"). A member without a default
// member initializer makes -Wmissing-field-initializers fire on these lines.
//
// Each aggregate is filled twice, naming only its first member and only its last, so that every
// member is left out once. tests/headers/check_aggregates.cmake fails when a header gains an
// aggregate (a namespace-scope `struct` other than a deleter) that this file does not fill.
#include <gpu/gpu.hpp>

#if CUDAGAP_TEST_BLAS
#include <gpu/blas.hpp>
#endif
#if CUDAGAP_TEST_DNN
#include <gpu/dnn.hpp>
#endif
#if CUDAGAP_TEST_NN
#include <gpu/nn.hpp>
#endif
#if CUDAGAP_TEST_NCCL
#include <gpu/nccl.hpp>
#endif
#if CUDAGAP_TEST_HOST_BLAS
#include <gpu/host_blas.hpp>
#endif
#if CUDAGAP_TEST_TOOLS
#include <gpu/tools.hpp>
#endif
#if CUDAGAP_TEST_NN
#include <gpu/nn.hpp>
#endif

#include <string>
#include <vector>

// Names the first member only, then the last member only.
#define CUDAGAP_FILL(type, first, last)                                                            \
    {                                                                                              \
        [[maybe_unused]] const type by_first{.first = {}};                                         \
        [[maybe_unused]] const type by_last{.last = {}};                                           \
    }

namespace {

// What users write, as in README.md and docs/.
[[maybe_unused]] void as_documented()
{
    [[maybe_unused]] const gpu::benchmark_options options{.warmup = 3, .repetitions = 10};
    [[maybe_unused]] const gpu::semantic_version version{.major = 9, .minor = 1};
#if CUDAGAP_TEST_TOOLS
    [[maybe_unused]] const gpu::tools::diagnose_options diagnose{.search_path = {"/usr/lib"}};
#endif
#if CUDAGAP_TEST_DNN
    // The report: `convolution_problem{.input = ..., .filter = ...}` warned.
    [[maybe_unused]] const gpu::dnn::convolution_problem problem{
        .input = {32, 3, 224, 224},
        .filter = {64, 3, 3, 3},
        .geometry = {.padding = {1, 1}},
    };
    [[maybe_unused]] const gpu::dnn::convolution_options dnn_options{
        .search = gpu::dnn::algorithm_search::exhaustive, .allow_tf32 = true};
    // docs/dnn_ops.md: torch.nn.MaxPool2d(3, stride=2, padding=1).
    [[maybe_unused]] const gpu::dnn::pooling_geometry pool{
        .window = {3, 3}, .padding = {1, 1}, .stride = {2, 2}};
#endif
#if CUDAGAP_TEST_BLAS
    [[maybe_unused]] const gpu::blas::handle_options blas_options{.synchronous_checks = true};
    [[maybe_unused]] const gpu::blas::lt_handle_options lt_options{.allow_tf32 = true};
#endif
#if CUDAGAP_TEST_NN
    [[maybe_unused]] const gpu::nn::linear_options fc{.relu = true};
    // docs/nn_layers.md: nn.Conv2d(1, 32, 3, padding=1).
    [[maybe_unused]] const gpu::nn::conv2d_options conv{.padding = {1, 1}};
    [[maybe_unused]] const gpu::nn::tensor_spec spec{.shape = {64, 1, 28, 28},
                                                     .type = gpu::element_type::fp16};
#endif
#if CUDAGAP_TEST_NN
    // docs/nn_math.md: optim.AdamW(params, lr=1e-4) and a GradScaler with a short interval.
    [[maybe_unused]] const gpu::nn::adamw_options adamw{.lr = 1e-4};
    [[maybe_unused]] const gpu::nn::grad_scaler_options scaler{.init_scale = 1024.0F,
                                                               .growth_interval = 3};
#endif
}

[[maybe_unused]] void core_aggregates()
{
    CUDAGAP_FILL(gpu::compute_capability, major, minor)
    CUDAGAP_FILL(gpu::device_properties, id, pci_bus_id)
    CUDAGAP_FILL(gpu::memory_info, free_bytes, total_bytes)
    CUDAGAP_FILL(gpu::allocation_stats, current_bytes, total_allocations)
    CUDAGAP_FILL(gpu::pool_info, supported, release_threshold_bytes)
    CUDAGAP_FILL(gpu::graph_update_result, kind, reason)
    CUDAGAP_FILL(gpu::detail::allocation, pointer, device)
    CUDAGAP_FILL(gpu::detail::call_checks, synchronous_checks, check_numerics)
    CUDAGAP_FILL(gpu::detail::enum_name<gpu::element_type>, value, name)
    CUDAGAP_FILL(gpu::detail::element_type_facts, value, size)
    CUDAGAP_FILL(gpu::detail::element_type_mapping<gpu::preferred_precision>, value, name)
    CUDAGAP_FILL(gpu::detail::failure_context, call, device)
    CUDAGAP_FILL(gpu::detail::pinned_allocation, pointer, bytes)
    CUDAGAP_FILL(gpu::detail::stream_argument, handle, handle)
    CUDAGAP_FILL(gpu::detail::resource_vtable, allocate, equal)
    CUDAGAP_FILL(gpu::memory_ledger_row, tag, measured_bytes)
    CUDAGAP_FILL(gpu::device_memory_reading, known, graph_used_peak_bytes)
    CUDAGAP_FILL(gpu::memory_ledger_snapshot, device, reading)
    CUDAGAP_FILL(gpu::ledger_entry, bytes, tag)
    CUDAGAP_FILL(gpu::detail::measured_record, ledger, id)
    CUDAGAP_FILL(gpu::memory_event, time_ns, range)
    CUDAGAP_FILL(gpu::non_finite_report, elements, first_index)
    CUDAGAP_FILL(gpu::detail::strided_elements, batch, run_stride)
    CUDAGAP_FILL(gpu::profile, name, nvtx_ranges)
    CUDAGAP_FILL(gpu::dims3, x, z)
    CUDAGAP_FILL(gpu::launch_config, grid, dynamic_shared_bytes)
    CUDAGAP_FILL(gpu::launch_limits, device, shared_bytes_per_block_optin)
    CUDAGAP_FILL(gpu::block_size_choice, block_size, blocks_per_multiprocessor)
    CUDAGAP_FILL(gpu::occupancy_limits, max_threads_per_multiprocessor, multiprocessor_count)
    CUDAGAP_FILL(gpu::nvtx::colour, argb, argb)
    CUDAGAP_FILL(gpu::stream_priority_range, least, greatest)
    CUDAGAP_FILL(gpu::statistics, count, samples_ms)
    CUDAGAP_FILL(gpu::benchmark_options, warmup, max_repetitions)
    CUDAGAP_FILL(gpu::semantic_version, major, patch)
    CUDAGAP_FILL(gpu::cuda_version, major, minor)
    CUDAGAP_FILL(gpu::driver_info, supported_cuda, reason)
    CUDAGAP_FILL(gpu::cuda_architecture, sm, suffix)
}

#if CUDAGAP_TEST_TOOLS
[[maybe_unused]] void tools_aggregates()
{
    CUDAGAP_FILL(gpu::tools::diagnostic, name, caused_by)
    CUDAGAP_FILL(gpu::tools::diagnosis, checks, checks)
    CUDAGAP_FILL(gpu::tools::diagnose_options, search_path, tool_timeout)
    CUDAGAP_FILL(gpu::tools::library_copy, path, wheel)
    CUDAGAP_FILL(gpu::tools::vram_advice, total_bytes, notes)
    CUDAGAP_FILL(gpu::tools::vram_usage, device_id, device_memory)
    CUDAGAP_FILL(gpu::tools::vram_clear_result, before, after)
}
#endif

#if CUDAGAP_TEST_BLAS
[[maybe_unused]] void blas_aggregates()
{
    CUDAGAP_FILL(gpu::blas::precision_info, which, note)
    CUDAGAP_FILL(gpu::blas::peak_figure, tflops, source)
    CUDAGAP_FILL(gpu::blas::detail::hint_facts, gpu_available, cuda_error)
    CUDAGAP_FILL(gpu::blas::detail::gemm_call, plan, batched)
    CUDAGAP_FILL(gpu::matrix::strided_batch, count, stride_c)
    CUDAGAP_FILL(gpu::matrix::gemm_plan, op_first, batch_count)
    CUDAGAP_FILL(gpu::matrix::detail::operand_shape, name, order)
    CUDAGAP_FILL(gpu::blas::handle_options, math, check_numerics)
    CUDAGAP_FILL(gpu::blas::version_info, compiled, loaded)
    CUDAGAP_FILL(gpu::blas::lt_handle_options, allow_tf32, workspace_bytes)
    CUDAGAP_FILL(gpu::blas::lt_problem, plan, alignment_vector)
    CUDAGAP_FILL(gpu::blas::detail::lt_call, problem, beta)
    CUDAGAP_FILL(gpu::blas::detail::lt_descriptor_values, compute_type, c_ld)
}
#endif

#if CUDAGAP_TEST_NCCL
[[maybe_unused]] void nccl_aggregates()
{
    CUDAGAP_FILL(gpu::nccl::version_info, compiled, loaded)
    CUDAGAP_FILL(gpu::nccl::detail::hint_facts, gpu_available, nccl)
    CUDAGAP_FILL(gpu::nccl::communicator_options, timeout, close_timeout)
    CUDAGAP_FILL(gpu::nccl::detail::communicator_record, comm, close_timeout)
    CUDAGAP_FILL(gpu::nccl::detail::collective_call, function, in_place)
    // docs/scaling_out.md: a job whose ranks start within a minute.
    [[maybe_unused]] const gpu::nccl::communicator_options options{.timeout =
                                                                       std::chrono::minutes(1)};
}
#endif

#if CUDAGAP_TEST_NN
[[maybe_unused]] void nn_aggregates()
{
    CUDAGAP_FILL(gpu::nn::mixed_precision, compute, compute)
    CUDAGAP_FILL(gpu::nn::initialization, kind, bound)
    CUDAGAP_FILL(gpu::nn::parameter_info, name, init)
    CUDAGAP_FILL(gpu::nn::parameter_view, master, shape)
    CUDAGAP_FILL(gpu::nn::tensor_spec, shape, layout)
    CUDAGAP_FILL(gpu::nn::tensor_ref, data, spec)
    CUDAGAP_FILL(gpu::nn::linear_options, bias, bias_gradient)
    CUDAGAP_FILL(gpu::nn::conv2d_options, stride, bias)
    CUDAGAP_FILL(gpu::nn::grad_scaler_options, init_scale, enabled)
    CUDAGAP_FILL(gpu::nn::grad_scaler_state, scale, growth_tracker)
    CUDAGAP_FILL(gpu::nn::loss_scaling_advice, needed, reason)
    CUDAGAP_FILL(gpu::nn::bad_label, row, label)
    CUDAGAP_FILL(gpu::nn::adamw_options, lr, weight_decay)
    CUDAGAP_FILL(gpu::nn::adamw_state, step, exp_avg_sq)
    CUDAGAP_FILL(gpu::nn::tensor_view, name, data)
    CUDAGAP_FILL(gpu::nn::idx_array, type, data)
    CUDAGAP_FILL(gpu::nn::idx_images, count, pixels)
    CUDAGAP_FILL(gpu::nn::idx_dataset, images, labels)
    CUDAGAP_FILL(gpu::nn::training_state, parameters, scaler)
    CUDAGAP_FILL(gpu::nn::captured_step_options, warmup_steps, mode)
    CUDAGAP_FILL(gpu::nn::batch_source, pixels, item_elements)
    CUDAGAP_FILL(gpu::nn::normalization, mean, std)
}
#endif

#if CUDAGAP_TEST_DNN
[[maybe_unused]] void dnn_aggregates()
{
    CUDAGAP_FILL(gpu::dnn::convolution_geometry, padding, mode)
    CUDAGAP_FILL(gpu::dnn::convolution_problem, input, epilogue)
    CUDAGAP_FILL(gpu::dnn::convolution_options, search, check_numerics)
    CUDAGAP_FILL(gpu::dnn::algorithm_candidate, algorithm, reason)
    CUDAGAP_FILL(gpu::dnn::basic_algorithm_candidate<gpu::dnn::backward_data_algorithm>, algorithm,
                 reason)
    CUDAGAP_FILL(gpu::dnn::basic_algorithm_candidate<gpu::dnn::backward_filter_algorithm>,
                 algorithm, reason)
    CUDAGAP_FILL(gpu::dnn::convolution_explanation, problem, candidates)
    CUDAGAP_FILL(gpu::dnn::basic_convolution_explanation<gpu::dnn::backward_data_algorithm>,
                 problem, candidates)
    CUDAGAP_FILL(gpu::dnn::basic_convolution_explanation<gpu::dnn::backward_filter_algorithm>,
                 problem, candidates)
    CUDAGAP_FILL(gpu::dnn::plan_cache_stats, entries, misses)
    CUDAGAP_FILL(gpu::dnn::detail::element_info, size, is_float)
    CUDAGAP_FILL(gpu::dnn::detail::convolution_counts, input, output)
    CUDAGAP_FILL(gpu::dnn::detail::bias_buffer_sizes, element, db)
    CUDAGAP_FILL(gpu::dnn::detail::hint_facts, gpu_available, device)
    CUDAGAP_FILL(gpu::dnn::version_info, compiled, loaded_for_cuda)
    CUDAGAP_FILL(gpu::dnn::pooling_geometry, window, propagate_nan)
    CUDAGAP_FILL(gpu::dnn::detail::buffer_check, name, need)
}
#endif

#if CUDAGAP_TEST_HOST_BLAS
[[maybe_unused]] void host_blas_aggregates()
{
    CUDAGAP_FILL(gpu::host_blas::cpu_features, model, avx512vl)
    CUDAGAP_FILL(gpu::host_blas::library_info, kind, threads)
}
#endif

} // namespace
