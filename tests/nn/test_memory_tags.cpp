// The ledger's tags of the nn layer's memory (src/nn/memory_tags.hpp): which tag each kind of
// memory carries, and a whole training step's ledger against the sizes the model declares.
#include "memory_tags.hpp" // the layer's private tags
#include "tiny_model.hpp"

#include <gpu/blas/handle.hpp>
#include <gpu/device.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_tag.hpp>
#include <gpu/nn/tensor.hpp>

#include "catch.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace nn = gpu::nn;

TEST_CASE("the nn layer's memory carries the standard tags of its categories", "[nn][memory]")
{
    using gpu::memory_category;
    CHECK(nn::detail::parameters_tag.category() == memory_category::parameters);
    CHECK(nn::detail::gradients_tag.category() == memory_category::gradients);
    CHECK(nn::detail::working_copy_tag.category() == memory_category::working_copy);
    CHECK(nn::detail::optimizer_state_tag.category() == memory_category::optimizer_state);
    CHECK(nn::detail::scratch_tag.category() == memory_category::scratch);
    CHECK(nn::detail::activations_tag.category() == memory_category::activations);
    CHECK(nn::detail::optimizer_state_tag.name() == "optimizer state");
}

TEST_CASE("a tensor is activations unless the thread's scope names a tag", "[nn][memory]")
{
    CHECK(nn::detail::tensor_tag() == nn::detail::activations_tag);
    const gpu::memory_tag bucket =
        gpu::memory_tag::define("test bucket 4 activations", gpu::memory_category::activations);
    {
        const gpu::memory_tag_scope serving(bucket);
        CHECK(nn::detail::tensor_tag() == bucket);
        {
            const gpu::memory_tag_scope captured(
                gpu::memory_tag::standard(gpu::memory_category::graph_pool));
            CHECK(nn::detail::tensor_tag().category() == gpu::memory_category::graph_pool);
        }
        CHECK(nn::detail::tensor_tag() == bucket);
    }
    CHECK(nn::detail::tensor_tag() == nn::detail::activations_tag);
    // An empty tensor allocates nothing and needs no GPU, whatever its tag.
    const nn::tensor empty(nn::tensor_spec{.shape = {0, 4}}, gpu::legacy_default_stream);
    CHECK(empty.data() == nullptr);
}

namespace {

// The current bytes of each tag on @p device of the process's ledger, by name.
std::map<std::string, std::size_t> current_by_tag(int device)
{
    std::map<std::string, std::size_t> bytes;
    for (const gpu::memory_ledger_row& row : gpu::memory_ledger::global().rows(device)) {
        bytes[row.name] = row.current_bytes;
    }
    return bytes;
}

// What @p tag grew by from @p before to @p after.
long long growth(const std::map<std::string, std::size_t>& before,
                 const std::map<std::string, std::size_t>& after, const std::string& tag)
{
    const auto was = before.find(tag);
    const auto is = after.find(tag);
    return static_cast<long long>(is == after.end() ? 0 : is->second) -
           static_cast<long long>(was == before.end() ? 0 : was->second);
}

} // namespace

TEST_CASE("a training step's ledger matches the sizes the layers and plans declare",
          "[nn][memory][gpu]")
{
    constexpr std::int64_t rows = 16;
    const gpu::device dev = gpu::current_device();
    gpu::stream s;
    const auto before = current_by_tag(dev.id());
    gpu::test::model_handles handles(s);
    gpu::test::tiny_model model(handles, s, nn::mixed_precision::bf16(), rows, 3);
    const gpu::test::host_batch batch = gpu::test::make_batch(rows, gpu::element_type::bf16, 4);
    model.load(batch);
    model.step(s);
    s.synchronize();
    const auto after = current_by_tag(dev.id());

    const auto total = static_cast<long long>(model.store.total_elements());
    CHECK(growth(before, after, "parameters") == total * 4);
    CHECK(growth(before, after, "gradients") == total * 4);
    CHECK(growth(before, after, "working copy") == total * 2); // BF16
    // AdamW's two moments, its step counter and factors; the grad scaler's scale and tracker.
    CHECK(growth(before, after, "optimizer state") == 2 * total * 4 + 8 + 2 * 8 + 2 * 4 + 4);
    const auto tensor_bytes = [](const nn::tensor& t) {
        return static_cast<long long>(t.spec().bytes());
    };
    CHECK(growth(before, after, "activations") ==
          tensor_bytes(model.x) + tensor_bytes(model.h) + tensor_bytes(model.dh) +
              tensor_bytes(model.y) + tensor_bytes(model.dy));
    // fc1's ReLU gradient (rows x 32 in BF16) at least, and cross-entropy's error flag.
    CHECK(growth(before, after, "scratch") >= rows * 32 * 2 + 8);
    CHECK(growth(before, after, "cuBLAS workspace") ==
          static_cast<long long>(handles.blas.workspace_size().value_or(0)));
    CHECK(growth(before, after, "cuBLASLt workspace") ==
          static_cast<long long>(gpu::blas::recommended_workspace_bytes(dev.capability())));
    // The labels and the loss are the test's own buffers: nothing of the model is untagged.
    CHECK(growth(before, after, "user") ==
          static_cast<long long>(model.labels.size_bytes() + model.loss_value.size_bytes()));
}
