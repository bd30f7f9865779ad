// cuBLASLt: the handle with its workspace and stream, the argument checks of a matmul, its
// descriptors, and the cache that asks cuBLASLt's heuristic once per problem.
#include "memory_tags.hpp"

#include <gpu/blas/handle.hpp> // recommended_workspace_bytes
#include <gpu/blas/lt.hpp>
#include <gpu/capture.hpp>
#include <gpu/detail/enum_names.hpp>
#include <gpu/detail/expects.hpp>
#include <gpu/device.hpp>
#include <gpu/event.hpp>
#include <gpu/detail/unique_handle.hpp>
#include <gpu/nvtx.hpp>

#include "library_types.hpp"

#include <array>
#include <map>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <string>

namespace gpu::blas {

constexpr gpu::detail::enum_name<lt_epilogue> lt_epilogue_names[] = {
    {lt_epilogue::none, "none"},
    {lt_epilogue::bias, "bias"},
    {lt_epilogue::relu_bias, "relu_bias"},
    {lt_epilogue::bias_gradient, "bias_gradient"}};
std::string_view to_string(lt_epilogue epilogue) noexcept
{
    return gpu::detail::name_of(lt_epilogue_names, epilogue);
}

lt_handle_options lt_handle_options::from_profile(const gpu::profile& profile)
{
    lt_handle_options options;
    options.allow_tf32 = profile.allow_tf32;
    return options;
}

std::string lt_problem::to_string() const
{
    const matrix::gemm_plan& p = plan;
    return std::string(gpu::to_string(input)) + " inputs, " + std::string(gpu::to_string(output)) +
           " output, epilogue " + std::string(blas::to_string(epilogue)) +
           (allow_tf32 && input == element_type::fp32 ? ", TF32" : "") +
           ", column-major m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) +
           " k=" + std::to_string(p.k) + " op " + matrix::to_char(p.op_first) +
           matrix::to_char(p.op_second) + " ld " + std::to_string(p.ld_first) + "/" +
           std::to_string(p.ld_second) + "/" + std::to_string(p.ldc) + ", alignment " +
           std::to_string(alignment_first) + "/" + std::to_string(alignment_second) + "/" +
           std::to_string(alignment_c) + "/" + std::to_string(alignment_vector);
}

namespace detail {

namespace {

struct matmul_desc_deleter {
    void operator()(cublasLtMatmulDesc_t raw) const noexcept
    {
        gpu::detail::report_destroy_failure("cublasLtMatmulDescDestroy",
                                            cublasLtMatmulDescDestroy(raw));
    }
};
struct layout_deleter {
    void operator()(cublasLtMatrixLayout_t raw) const noexcept
    {
        gpu::detail::report_destroy_failure("cublasLtMatrixLayoutDestroy",
                                            cublasLtMatrixLayoutDestroy(raw));
    }
};
struct preference_deleter {
    void operator()(cublasLtMatmulPreference_t raw) const noexcept
    {
        gpu::detail::report_destroy_failure("cublasLtMatmulPreferenceDestroy",
                                            cublasLtMatmulPreferenceDestroy(raw));
    }
};

using matmul_desc = gpu::detail::unique_handle<cublasLtMatmulDesc_t, matmul_desc_deleter>;
using matrix_layout = gpu::detail::unique_handle<cublasLtMatrixLayout_t, layout_deleter>;
using preference = gpu::detail::unique_handle<cublasLtMatmulPreference_t, preference_deleter>;

// What a problem's matmul is described by: the operation, and the layouts of A, B and C (= D).
struct descriptors {
    matmul_desc operation;
    matrix_layout a;
    matrix_layout b;
    matrix_layout c;
};

bool uses_vector(lt_epilogue epilogue) noexcept
{
    return epilogue != lt_epilogue::none;
}

cublasLtEpilogue_t to_cublaslt(lt_epilogue epilogue) noexcept
{
    switch (epilogue) {
    case lt_epilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case lt_epilogue::relu_bias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case lt_epilogue::bias_gradient:
        // cudagap's epilogues need a row-major c, so the column-major problem always has the
        // operands swapped: cuBLASLt's B is the caller's a, and BGRADB reduces it over k.
        return CUBLASLT_EPILOGUE_BGRADB;
    case lt_epilogue::none: break;
    }
    return CUBLASLT_EPILOGUE_DEFAULT;
}

template <class Value>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
                   const Value& value)
{
    GPU_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)));
}

matrix_layout make_layout(element_type type, std::int64_t rows, std::int64_t cols, std::int64_t ld)
{
    cublasLtMatrixLayout_t raw = nullptr;
    GPU_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&raw, cuda_data_type(type),
                                                static_cast<std::uint64_t>(rows),
                                                static_cast<std::uint64_t>(cols), ld));
    return matrix_layout(raw);
}

// The descriptors of a problem. The vector's pointer is set per call (set_vector).
descriptors make_descriptors(const lt_problem& problem)
{
    const matrix::gemm_plan& p = problem.plan;
    descriptors d;
    cublasLtMatmulDesc_t raw = nullptr;
    GPU_CUBLAS_CHECK(cublasLtMatmulDescCreate(
        &raw, lt_compute_type(problem.input, problem.allow_tf32), CUDA_R_32F));
    d.operation.reset(raw);
    const std::int32_t transa = cublas_operation(p.op_first);
    const std::int32_t transb = cublas_operation(p.op_second);
    const std::uint32_t epilogue = to_cublaslt(problem.epilogue);
    set_attribute(raw, CUBLASLT_MATMUL_DESC_TRANSA, transa);
    set_attribute(raw, CUBLASLT_MATMUL_DESC_TRANSB, transb);
    set_attribute(raw, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
    // A, B and C as stored: op(A) is m x k, op(B) is k x n.
    const bool a_plain = p.op_first == matrix::operation::none;
    const bool b_plain = p.op_second == matrix::operation::none;
    d.a = make_layout(problem.input, a_plain ? p.m : p.k, a_plain ? p.k : p.m, p.ld_first);
    d.b = make_layout(problem.input, b_plain ? p.k : p.n, b_plain ? p.n : p.k, p.ld_second);
    d.c = make_layout(problem.output, p.m, p.n, p.ldc);
    return d;
}

void set_vector(cublasLtMatmulDesc_t desc, const void* vector)
{
    set_attribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, vector);
}

// One cached problem: its descriptors and the algorithm the heuristic chose, or its refusal.
struct cached_plan {
    descriptors described;
    bool supported = false;
    cublasStatus_t refusal = CUBLAS_STATUS_NOT_SUPPORTED; // why not, when not supported
    cublasLtMatmulAlgo_t algorithm{};
    std::size_t workspace_bytes = 0;
};

preference make_preference(const lt_problem& problem, std::size_t workspace_bytes)
{
    cublasLtMatmulPreference_t raw = nullptr;
    GPU_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw));
    preference pref(raw);
    const std::uint64_t workspace = workspace_bytes;
    GPU_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
    // The heuristic assumes 256-byte aligned matrices unless told otherwise, and may then pick a
    // kernel that faults on a pointer into the middle of a buffer (as PyTorch found): give it
    // the real alignment of each operand.
    const std::array<std::pair<cublasLtMatmulPreferenceAttributes_t, std::uint32_t>, 4> alignments{{
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, problem.alignment_first},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, problem.alignment_second},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, problem.alignment_c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, problem.alignment_c},
    }};
    for (const auto& [attribute, bytes] : alignments) {
        GPU_CUBLAS_CHECK(
            cublasLtMatmulPreferenceSetAttribute(raw, attribute, &bytes, sizeof(bytes)));
    }
    return pref;
}

// Asks the heuristic for the best algorithm of a described problem; a refusal is remembered.
void choose_algorithm(cublasLtHandle_t handle, const lt_problem& problem,
                      std::size_t workspace_bytes, cached_plan& plan)
{
    const preference pref = make_preference(problem, workspace_bytes);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const descriptors& d = plan.described;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(handle, d.operation.get(), d.a.get(), d.b.get(), d.c.get(),
                                       d.c.get(), pref.get(), 1, &result, &found);
    // cuBLASLt answers a combination it has no kernel for (an epilogue with these types, say)
    // with NOT_SUPPORTED, and some with INVALID_VALUE: both are a refusal to remember, which a
    // caller can ask about (lt_supported) before a matmul reports it.
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE) {
        plan.supported = false;
        plan.refusal = status;
        return;
    }
    if (status != CUBLAS_STATUS_SUCCESS) {
        gpu::detail::throw_error(status, "cublasLtMatmulAlgoGetHeuristic",
                                 std::source_location::current(), problem.to_string());
    }
    plan.supported = found > 0 && result.state == CUBLAS_STATUS_SUCCESS;
    plan.algorithm = result.algo;
    plan.workspace_bytes = result.workspaceSize;
}

// The key of a problem in the cache: every field that decides the algorithm.
using plan_key = std::array<std::int64_t, 16>;

plan_key key_of(const lt_problem& q)
{
    const matrix::gemm_plan& p = q.plan;
    return {p.m,
            p.n,
            p.k,
            static_cast<std::int64_t>(p.op_first),
            static_cast<std::int64_t>(p.op_second),
            p.ld_first,
            p.ld_second,
            p.ldc,
            static_cast<std::int64_t>(q.input),
            static_cast<std::int64_t>(q.output),
            static_cast<std::int64_t>(q.epilogue),
            q.allow_tf32 && q.input == element_type::fp32,
            q.alignment_first,
            q.alignment_second,
            q.alignment_c,
            q.alignment_vector};
}

[[noreturn]] void throw_no_algorithm(const lt_problem& problem, cublasStatus_t refusal)
{
    gpu::detail::throw_error(refusal, "cublasLtMatmulAlgoGetHeuristic",
                             std::source_location::current(),
                             "no cuBLASLt algorithm for " + problem.to_string());
}

} // namespace

/// @brief The plans of one handle, by problem (node-based: a plan's descriptors stay put).
class lt_plan_cache {
public:
    // The plan of @p call's problem, made and asked for an algorithm when it is new.
    cached_plan& find_or_choose(cublasLtHandle_t handle, const lt_call& call,
                                std::size_t workspace_bytes)
    {
        const plan_key key = key_of(call.problem);
        auto found = plans_.find(key);
        if (found != plans_.end()) {
            return found->second;
        }
        cached_plan plan{make_descriptors(call.problem)};
        if (uses_vector(call.problem.epilogue)) {
            // The heuristic reads the vector's address (not its data) for its alignment.
            set_vector(plan.described.operation.get(), call.vector);
        }
        choose_algorithm(handle, call.problem, workspace_bytes, plan);
        return plans_.emplace(key, std::move(plan)).first->second;
    }

    [[nodiscard]] std::size_t size() const noexcept { return plans_.size(); }
    void clear() noexcept { plans_.clear(); }

private:
    std::map<plan_key, cached_plan> plans_;
};

void lt_handle_deleter::operator()(cublasLtHandle_t handle) const noexcept
{
    gpu::detail::report_destroy_failure("cublasLtDestroy", cublasLtDestroy(handle));
}

std::uint32_t alignment_of(const void* pointer) noexcept
{
    const auto address = reinterpret_cast<std::uintptr_t>(pointer);
    std::uint32_t alignment = 1;
    while (alignment < 256 && address % (std::uintptr_t{2} * alignment) == 0) {
        alignment *= 2;
    }
    return alignment;
}

namespace {

// The epilogue's checks: a known epilogue, a row-major c when it has one, and its vector.
void check_epilogue(const matrix::gemm_plan& plan, matrix::layout c_order, lt_epilogue epilogue,
                    const void* vector, std::string_view function)
{
    const bool named = epilogue == lt_epilogue::none || epilogue == lt_epilogue::bias ||
                       epilogue == lt_epilogue::relu_bias || epilogue == lt_epilogue::bias_gradient;
    GPU_EXPECTS(named, std::invalid_argument, function, ": epilogue ", static_cast<int>(epilogue),
                " is not a gpu::blas::lt_epilogue");
    if (epilogue == lt_epilogue::none) {
        GPU_EXPECTS(vector == nullptr, std::invalid_argument, function,
                    ": a vector was given, but no epilogue reads or writes one");
        return;
    }
    const std::string_view name = to_string(epilogue);
    GPU_EXPECTS(
        c_order == matrix::layout::row_major, std::invalid_argument, function, ": the ", name,
        " epilogue needs a row-major c (its vector has one value per column of c, or per row "
        "of a); c is column-major");
    // A row-major c is always the swapped column-major problem: c's columns are plan.m, its
    // rows (a's rows) plan.n.
    const bool gradient = epilogue == lt_epilogue::bias_gradient;
    const std::int64_t length = gradient ? plan.n : plan.m;
    GPU_EXPECTS(vector != nullptr || plan.empty(), std::invalid_argument, function, ": the ", name,
                " epilogue needs a vector of ", length, " elements in device memory; it is null");
    GPU_EXPECTS(
        !gradient || !plan.empty() || plan.n == 0, std::invalid_argument, function,
        ": c has no columns, so the ", length,
        "-element bias gradient would not be written (cuBLASLt is not called for an empty c)");
}

} // namespace

lt_problem plan_lt(const matrix::gemm_plan& plan, element_type input, element_type output,
                   matrix::layout c_order, lt_epilogue epilogue, const void* a, const void* b,
                   const void* c, const void* vector, bool allow_tf32, std::string_view function)
{
    check_epilogue(plan, c_order, epilogue, vector, function);
    GPU_EXPECTS(
        plan.k > 0 || plan.empty(), std::invalid_argument, function,
        ": the inner dimension k is 0 (a has no columns, b no rows); cuBLASLt multiplies at "
        "least one (use gpu::blas::gemm to only scale c by beta)");
    lt_problem problem;
    problem.plan = plan;
    problem.input = input;
    problem.output = output;
    problem.epilogue = epilogue;
    problem.allow_tf32 = allow_tf32 && input == element_type::fp32;
    problem.alignment_first = alignment_of(plan.first(a, b));
    problem.alignment_second = alignment_of(plan.second(a, b));
    problem.alignment_c = alignment_of(c);
    problem.alignment_vector = alignment_of(vector);
    return problem;
}

lt_descriptor_values read_back_descriptors(const lt_problem& problem)
{
    const descriptors d = make_descriptors(problem);
    lt_descriptor_values v;
    std::size_t written = 0;
    const auto get = [&](cublasLtMatmulDescAttributes_t attribute, auto& value) {
        GPU_CUBLAS_CHECK(cublasLtMatmulDescGetAttribute(d.operation.get(), attribute, &value,
                                                        sizeof(value), &written));
    };
    get(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, v.compute_type);
    get(CUBLASLT_MATMUL_DESC_SCALE_TYPE, v.scale_type);
    get(CUBLASLT_MATMUL_DESC_TRANSA, v.transa);
    get(CUBLASLT_MATMUL_DESC_TRANSB, v.transb);
    get(CUBLASLT_MATMUL_DESC_EPILOGUE, v.epilogue);
    const auto layout = [&](cublasLtMatrixLayout_t raw, int& type, std::uint64_t& rows,
                            std::uint64_t& cols, std::int64_t& ld) {
        std::uint32_t stored_type = 0;
        GPU_CUBLAS_CHECK(cublasLtMatrixLayoutGetAttribute(
            raw, CUBLASLT_MATRIX_LAYOUT_TYPE, &stored_type, sizeof(stored_type), &written));
        GPU_CUBLAS_CHECK(cublasLtMatrixLayoutGetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows,
                                                          sizeof(rows), &written));
        GPU_CUBLAS_CHECK(cublasLtMatrixLayoutGetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_COLS, &cols,
                                                          sizeof(cols), &written));
        GPU_CUBLAS_CHECK(cublasLtMatrixLayoutGetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_LD, &ld,
                                                          sizeof(ld), &written));
        type = static_cast<int>(stored_type);
    };
    layout(d.a.get(), v.a_type, v.a_rows, v.a_cols, v.a_ld);
    layout(d.b.get(), v.b_type, v.b_rows, v.b_cols, v.b_ld);
    layout(d.c.get(), v.c_type, v.c_rows, v.c_cols, v.c_ld);
    return v;
}

void run_lt(lt_handle& h, const lt_call& call, const char* function)
{
    h.require_handle(function);
    const lt_problem& p = call.problem;
    if (p.plan.empty()) {
        return;
    }
    cached_plan& plan = h.cache_->find_or_choose(h.get(), call, h.workspace_.size());
    if (!plan.supported) {
        throw_no_algorithm(p, plan.refusal);
    }
    const descriptors& d = plan.described;
    // cuBLASLt runs on the device current at the call: the handle's, and the caller's after.
    const scoped_device on(h.device());
    const nvtx::range range(
        [&] {
            return range_name(p.plan, p.input,
                              p.epilogue == lt_epilogue::none ? "" : blas::to_string(p.epilogue));
        },
        nvtx::colours::compute);
    if (uses_vector(p.epilogue)) {
        set_vector(d.operation.get(), call.vector);
    }
    const cublasStatus_t status =
        cublasLtMatmul(h.get(), d.operation.get(), &call.alpha, call.first, d.a.get(), call.second,
                       d.b.get(), &call.beta, call.c, d.c.get(), call.c, d.c.get(), &plan.algorithm,
                       h.workspace_.data(), h.workspace_.size(), h.stream_.get());
    if (status != CUBLAS_STATUS_SUCCESS) {
        gpu::detail::throw_error(status, "cublasLtMatmul", std::source_location::current(),
                                 p.to_string());
    }
}

bool lt_supported(lt_handle& h, const lt_call& call)
{
    h.require_handle("gpu::blas::lt_supports_bias_gradient");
    if (call.problem.plan.empty()) {
        return true; // nothing to run, nothing refused
    }
    return h.cache_->find_or_choose(h.get(), call, h.workspace_.size()).supported;
}

} // namespace detail

lt_handle::lt_handle(stream_ref stream, const lt_handle_options& options)
    : cache_(std::make_unique<detail::lt_plan_cache>()), stream_(stream),
      allow_tf32_(options.allow_tf32)
{
    // cublasLtCreate comes first: without a driver or GPU it is what fails, with the hint.
    // Made on the stream's device, whatever is current (the guard restores the caller's).
    // cublasLtCreate is the first call that can fail: without a driver or GPU it is what fails,
    // with the hint.
    device_ = gpu::detail::device_or_unknown(stream);
    const std::optional<scoped_device> on = gpu::detail::scoped_device_or_none(device_);
    cublasLtHandle_t raw = nullptr;
    GPU_CUBLAS_CHECK(cublasLtCreate(&raw));
    handle_.reset(raw);
    if (device_ < 0) {
        device_ = gpu::device::current().id();
    }
    workspace_ =
        device_buffer<std::byte>(options.workspace_bytes.value_or(recommended_workspace_bytes(
                                     gpu::device(device_).capability())),
                                 stream, detail::cublaslt_workspace_tag());
}

lt_handle::lt_handle(adopt_tag, cublasLtHandle_t raw, stream_ref stream,
                     const lt_handle_options& options)
    : handle_(raw), cache_(std::make_unique<detail::lt_plan_cache>()), stream_(stream),
      allow_tf32_(options.allow_tf32)
{
    if (raw != nullptr) {
        // cuBLASLt cannot say a handle's device: it is taken to be the stream's.
        device_ = stream.device().id();
        workspace_ =
            device_buffer<std::byte>(options.workspace_bytes.value_or(recommended_workspace_bytes(
                                         gpu::device(device_).capability())),
                                     stream, detail::cublaslt_workspace_tag());
    }
}

lt_handle lt_handle::from_native_handle(cublasLtHandle_t raw, stream_ref stream,
                                        const lt_handle_options& options)
{
    return lt_handle(adopt_tag{}, raw, stream, options);
}

lt_handle::lt_handle(lt_handle&& other) noexcept = default;
lt_handle& lt_handle::operator=(lt_handle&& other) noexcept = default;
lt_handle::~lt_handle() = default;

cublasLtHandle_t lt_handle::release() noexcept
{
    clear_cache();
    device_ = -1;
    return handle_.release();
}

gpu::device lt_handle::device() const
{
    require_handle("gpu::blas::lt_handle::device");
    return gpu::detail::device_from_cuda(device_);
}

void lt_handle::require_handle(const char* function) const
{
    if (!handle_) {
        gpu::detail::throw_empty_owner(function, "gpu::blas::lt_handle", "cuBLASLt handle");
    }
}

void lt_handle::set_stream(stream_ref stream)
{
    require_handle("gpu::blas::lt_handle::set_stream");
    if (stream == stream_) {
        return;
    }
    gpu::detail::require_same_device("gpu::blas::lt_handle::set_stream", "the handle", device_,
                                     "the stream", stream.device().id());
    if (!workspace_.empty()) {
        gpu::detail::refuse_joining_a_capture(stream_, stream, "gpu::blas::lt_handle::set_stream");
        // One workspace serves every stream: the new stream waits for what the old one queued,
        // so two matmuls never use it at once, and the buffer's free moves to the new stream.
        const event done(device(), event_flags::disable_timing);
        done.record(stream_);
        stream.wait(done);
        workspace_.set_stream(stream);
    }
    stream_ = stream;
}

void lt_handle::set_workspace_size(std::size_t bytes)
{
    require_handle("gpu::blas::lt_handle::set_workspace_size");
    // The old workspace is freed on the bound stream, after the work that may still use it.
    workspace_ = device_buffer<std::byte>(bytes, stream_, detail::cublaslt_workspace_tag());
    clear_cache();
}

std::size_t lt_handle::cached_problems() const noexcept
{
    return cache_ ? cache_->size() : 0;
}

void lt_handle::clear_cache() noexcept
{
    if (cache_) {
        cache_->clear();
    }
}

} // namespace gpu::blas
