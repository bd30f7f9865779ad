// The NVTX ranges of gpu::nn's layers, as NVTX itself receives them: each forward and backward
// is a range named after the layer and the pass ("nn fc1 backward"), around the layer's own work,
// and the cuDNN convolutions and cuBLASLt GEMMs inside a layer are ranges nested in it. Read back
// through the NVTX recorder (tests/support/nvtx_recording.hpp): on the host with a layer whose
// work is host code, and on a GPU with conv2d and linear.
#include <gpu/nn/conv2d.hpp>
#include <gpu/nn/flatten.hpp>
#include <gpu/nn/layer.hpp>
#include <gpu/nn/linear.hpp>
#include <gpu/nn/parameters.hpp>
#include <gpu/nn/tensor.hpp>
#include <gpu/nvtx.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"
#include "nn_test_support.hpp"
#include "nvtx_recording.hpp"

#include <algorithm>
#include <cstdint>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

namespace nn = gpu::nn;

namespace {

void* fake(std::uintptr_t address)
{
    return reinterpret_cast<void*>(address);
}

const std::string compute = " #ff2e7d32"; // gpu::nvtx::colours::compute, as the recorder writes it

// A layer named as linear and conv2d are, whose work is host code: it records the innermost open
// range while it runs, and how often its name was asked.
class named_probe : public nn::layer {
public:
    explicit named_probe(std::string name) : name_(std::move(name)) {}
    [[nodiscard]] std::string describe() const override { return "named_probe " + name_; }
    [[nodiscard]] std::string name() const override
    {
        ++names_asked;
        return name_;
    }
    mutable int names_asked = 0;
    std::vector<std::string> seen; // the innermost range during each call of its own work

private:
    nn::tensor_spec do_plan(nn::context&, const nn::tensor_spec& input) override { return input; }
    void do_forward(nn::context&, const nn::tensor_ref&, const nn::tensor_ref&) override
    {
        seen.emplace_back(gpu::nvtx::innermost_range());
    }
    void do_backward(nn::context&, const nn::tensor_ref&, const nn::tensor_ref&) override
    {
        seen.emplace_back(gpu::nvtx::innermost_range());
    }

    std::string name_;
};

} // namespace

TEST_CASE("a layer's forward and backward are ranges named after it, around its own work", "[nvtx]")
{
    gpu::test::nvtx_recorder& r = gpu::test::start_nvtx_recording();
    nn::parameters store;
    gpu::test::host_context host(store);
    named_probe fc1("fc1");
    const nn::tensor_spec spec{.shape = {4, 3}};
    fc1.plan(host.ctx, spec);
    {
        const gpu::nvtx::range step("train step");
        fc1.forward(host.ctx, {fake(0x10), spec}, {fake(0x20), spec});
        fc1.backward(host.ctx, {fake(0x30), spec}, {fake(0x40), spec});
    }
    CHECK(fc1.seen == std::vector<std::string>{"nn fc1 forward", "nn fc1 backward"});
    CHECK(r.lines_of("cudagap") ==
          std::vector<std::string>{
              "push cudagap train step", "push cudagap nn fc1 forward" + compute, "pop cudagap",
              "push cudagap nn fc1 backward" + compute, "pop cudagap", "pop cudagap"});
}

TEST_CASE("a layer without a name of its own is named by describe() in its ranges", "[nvtx]")
{
    gpu::test::nvtx_recorder& r = gpu::test::start_nvtx_recording();
    nn::parameters store;
    gpu::test::host_context host(store);
    nn::flatten flat; // a view: its forward and backward move nothing, so they run on the host
    const nn::tensor_spec in{.shape = {8, 4, 3, 3}};
    const nn::tensor_spec out = flat.plan(host.ctx, in);
    CHECK(flat.name() == flat.describe());
    flat.forward(host.ctx, {fake(0x1000), in}, {fake(0x1000), out});
    flat.backward(host.ctx, {fake(0x3000), out}, {fake(0x3000), in});
    CHECK(r.lines_of("cudagap") ==
          std::vector<std::string>{
              "push cudagap nn flatten(start_dim 1) forward" + compute, "pop cudagap",
              "push cudagap nn flatten(start_dim 1) backward" + compute, "pop cudagap"});
}

TEST_CASE("a layer's ranges cost nothing while ranges are off, and a refused call opens none",
          "[nvtx]")
{
    gpu::test::nvtx_recorder& r = gpu::test::start_nvtx_recording(false);
    nn::parameters store;
    gpu::test::host_context host(store);
    named_probe fc1("fc1");
    const nn::tensor_spec spec{.shape = {4, 3}};
    fc1.plan(host.ctx, spec);
    fc1.forward(host.ctx, {fake(0x10), spec}, {fake(0x20), spec});
    fc1.backward(host.ctx, {fake(0x30), spec}, {fake(0x40), spec});
    CHECK(fc1.names_asked == 0); // no name built
    CHECK(fc1.seen == std::vector<std::string>{"", ""});
    CHECK(r.lines().empty());

    gpu::nvtx::enable();
    CHECK_THROWS_AS(fc1.forward(host.ctx, {nullptr, spec}, {fake(0x20), spec}),
                    std::invalid_argument);
    CHECK(r.lines().empty());
    CHECK(gpu::nvtx::open_ranges().empty());
}

// conv2d with a bias: the forward plan has the bias epilogue, and its backward runs backward data
// and backward filter (the algorithms are cuDNN's choice, so any name stands for them). linear's
// cuBLASLt matmuls: y = x·Wᵀ + b, 2x10x256 with the bias epilogue; its backward's (dW, dx and
// the bias gradient) as its bias-gradient method decides.
TEST_CASE("conv2d's and linear's ranges hold their convolutions and GEMMs", "[nvtx][gpu]")
{
    gpu::stream stream;
    nn::parameters store;
    nn::conv2d conv1(store, "conv1", 3, 4, 3, {.padding = {1, 1}});
    nn::flatten flat;
    nn::linear fc1(store, "fc1", 4 * 8 * 8, 10);
    store.allocate(stream);
    store.initialize(5, stream);
    gpu::test::device_context device(stream, store);
    nn::context& ctx = device.ctx;
    const nn::tensor_spec x_spec{.shape = {2, 3, 8, 8}};
    const nn::tensor_spec conv_out = conv1.plan(ctx, x_spec);
    const nn::tensor_spec flat_out = flat.plan(ctx, conv_out);
    const nn::tensor_spec y_spec = fc1.plan(ctx, flat_out);
    nn::tensor x(x_spec, stream);
    nn::tensor dx(x_spec, stream);
    nn::tensor h(conv_out, stream);
    nn::tensor dh(conv_out, stream);
    nn::tensor y(y_spec, stream);
    nn::tensor dy(y_spec, stream);
    for (nn::tensor* t : {&x, &dx, &h, &dh, &y, &dy}) {
        t->buffer().fill_zero_async(stream);
    }
    const auto as_flat = [&](nn::tensor& t) { return nn::tensor_ref{t.data(), flat_out}; };

    gpu::test::nvtx_recorder& r = gpu::test::start_nvtx_recording();
    conv1.forward(ctx, x.ref(), h.ref());
    fc1.forward(ctx, as_flat(h), y.ref());
    fc1.backward(ctx, dy.ref(), as_flat(dh));
    conv1.backward(ctx, dh.ref(), dx.ref());
    stream.synchronize();
    gpu::nvtx::enable(false);

    // cuDNN chooses the algorithms: any name stands for them.
    std::vector<std::string> lines = r.lines_of("cudagap");
    const std::regex chosen(R"((conv [a-z ]+ \[[0-9,]+\]) [a-z_0-9]+)");
    for (std::string& line : lines) {
        line = std::regex_replace(line, chosen, "$1 <algorithm>");
    }
    // linear's backward: as many GEMMs as its bias-gradient method takes, each a range of its own.
    const auto backward =
        std::find(lines.begin(), lines.end(), "push cudagap nn fc1 backward" + compute);
    REQUIRE(backward != lines.end());
    auto after = backward + 1;
    int gemms = 0;
    while (after + 1 < lines.end() && after->starts_with("push cudagap gemm ") &&
           after->ends_with(compute) && *(after + 1) == "pop cudagap") {
        after += 2;
        ++gemms;
    }
    CHECK(gemms >= 1);
    lines.erase(backward + 1, after);
    CHECK(lines == std::vector<std::string>{
                       "push cudagap nn conv1 forward" + compute,
                       "push cudagap conv fwd [2,3,8,8] <algorithm> bias" + compute,
                       "pop cudagap",
                       "pop cudagap",
                       "push cudagap nn fc1 forward" + compute,
                       "push cudagap gemm 2x10x256 fp32 bias" + compute,
                       "pop cudagap",
                       "pop cudagap",
                       "push cudagap nn fc1 backward" + compute,
                       "pop cudagap",
                       "push cudagap nn conv1 backward" + compute,
                       "push cudagap conv bwd data [2,3,8,8] <algorithm>" + compute,
                       "pop cudagap",
                       "push cudagap conv bwd filter [2,3,8,8] <algorithm>" + compute,
                       "pop cudagap",
                       "pop cudagap",
                   });
}
