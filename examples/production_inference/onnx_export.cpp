// cudagap-infer's ONNX exporter (see onnx_export.hpp). The model is built as ONNX's own protobuf
// messages (onnx::ModelProto), checked by ONNX's checker and shape inference, and written
// atomically. onnx.cmake defines CUDAGAP_INFER_HAVE_ONNX when it found the library; without it the
// argument checks still run and export_onnx then throws the reason.
#include "onnx_export.hpp"

#include <gpu/version.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#ifdef CUDAGAP_INFER_HAVE_ONNX
#include <onnx/checker.h>
#include <onnx/common/version.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <atomic>
#include <cerrno>
#include <initializer_list>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>
#endif

namespace infer {
namespace {

// One parameter of the model as the graph uses it: PyTorch's name and shape.
struct model_tensor {
    std::string_view name;
    std::vector<std::int64_t> shape;
};

// The parameters of the convnet cudagap-train trains, in the order the graph uses them.
const std::array<model_tensor, 8>& model_tensors()
{
    static const std::array<model_tensor, 8> tensors{{
        {"conv1.weight", {32, 1, 5, 5}},
        {"conv1.bias", {32}},
        {"conv2.weight", {64, 32, 5, 5}},
        {"conv2.bias", {64}},
        {"fc1.weight", {1024, 64 * 7 * 7}},
        {"fc1.bias", {1024}},
        {"fc2.weight", {10, 1024}},
        {"fc2.bias", {10}},
    }};
    return tensors;
}

std::string shape_text(const std::vector<std::int64_t>& shape)
{
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
    }
    return text + "]";
}

// Every way @p store differs from the model: missing, misshaped and unexpected tensors.
std::vector<std::string> model_mismatches(const gpu::nn::parameters& store)
{
    std::vector<std::string> problems;
    for (const model_tensor& expected : model_tensors()) {
        const auto index = store.find(expected.name);
        if (!index) {
            problems.push_back("tensor '" + std::string(expected.name) + "' is missing (expected " +
                               shape_text(expected.shape) + ")");
        } else if (const auto& found = store.info(*index).shape; found != expected.shape) {
            problems.push_back("tensor '" + std::string(expected.name) + "' has shape " +
                               shape_text(found) + ", expected " + shape_text(expected.shape));
        }
    }
    for (const gpu::nn::parameter_info& info : store.infos()) {
        const bool known = std::ranges::any_of(
            model_tensors(), [&](const model_tensor& t) { return t.name == info.name; });
        if (!known) {
            problems.push_back("tensor '" + info.name + "' " + shape_text(info.shape) +
                               " is not part of the model");
        }
    }
    return problems;
}

// Throws std::invalid_argument naming everything wrong with the arguments.
void check_arguments(const gpu::nn::parameters& store, std::span<const float> values)
{
    const std::vector<std::string> problems = model_mismatches(store);
    if (!problems.empty()) {
        std::string message =
            "infer::export_onnx: the parameters are not those of cudagap-infer's convnet: ";
        for (std::size_t i = 0; i < problems.size(); ++i) {
            message += (i == 0 ? "" : "; ") + problems[i];
        }
        throw std::invalid_argument(message);
    }
    if (values.size() != store.total_elements()) {
        throw std::invalid_argument("infer::export_onnx: " + std::to_string(values.size()) +
                                    " values given for a store of " +
                                    std::to_string(store.total_elements()) +
                                    " elements (store.total_elements(), padding included)");
    }
}

#ifdef CUDAGAP_INFER_HAVE_ONNX

// ONNX stores raw tensor data little-endian; the host's floats are copied as they are.
static_assert(std::endian::native == std::endian::little,
              "the exporter copies FP32 values as little-endian bytes");

// The IR version that goes with opset 17 (ONNX 1.12): what older runtimes read.
constexpr std::int64_t ir_version = 8;

onnx::TensorProto initializer(const gpu::nn::parameter_info& info, std::span<const float> values)
{
    onnx::TensorProto tensor;
    tensor.set_name(info.name);
    tensor.set_data_type(onnx::TensorProto_DataType_FLOAT);
    for (const std::int64_t dim : info.shape) {
        tensor.add_dims(dim);
    }
    const std::span<const float> data = values.subspan(info.offset, info.count);
    tensor.set_raw_data(reinterpret_cast<const char*>(data.data()), data.size_bytes());
    return tensor;
}

// A float tensor `[batch, rest...]`, `batch` the dynamic dimension.
void describe_batched(onnx::ValueInfoProto& value, const char* name,
                      std::initializer_list<std::int64_t> rest, const char* doc)
{
    value.set_name(name);
    value.set_doc_string(doc);
    onnx::TypeProto_Tensor& tensor = *value.mutable_type()->mutable_tensor_type();
    tensor.set_elem_type(onnx::TensorProto_DataType_FLOAT);
    onnx::TensorShapeProto& shape = *tensor.mutable_shape();
    shape.add_dim()->set_dim_param("batch");
    for (const std::int64_t dim : rest) {
        shape.add_dim()->set_dim_value(dim);
    }
}

// A node `output = op(inputs...)`, named after its output.
onnx::NodeProto& add_node(onnx::GraphProto& graph, const char* op,
                          std::initializer_list<std::string> inputs, const std::string& output)
{
    onnx::NodeProto& node = *graph.add_node();
    node.set_op_type(op);
    node.set_name(output);
    for (const std::string& input : inputs) {
        node.add_input(input);
    }
    node.add_output(output);
    return node;
}

void set_ints(onnx::NodeProto& node, const char* name, std::initializer_list<std::int64_t> values)
{
    onnx::AttributeProto& attribute = *node.add_attribute();
    attribute.set_name(name);
    attribute.set_type(onnx::AttributeProto_AttributeType_INTS);
    for (const std::int64_t value : values) {
        attribute.add_ints(value);
    }
}

void set_int(onnx::NodeProto& node, const char* name, std::int64_t value)
{
    onnx::AttributeProto& attribute = *node.add_attribute();
    attribute.set_name(name);
    attribute.set_type(onnx::AttributeProto_AttributeType_INT);
    attribute.set_i(value);
}

// conv<n> (5x5, padding 2) -> relu<n> -> pool<n> (2x2, stride 2); returns the pool's output.
std::string add_conv_block(onnx::GraphProto& graph, const std::string& input, int n)
{
    const std::string layer = "conv" + std::to_string(n);
    onnx::NodeProto& conv =
        add_node(graph, "Conv", {input, layer + ".weight", layer + ".bias"}, layer);
    set_ints(conv, "kernel_shape", {5, 5});
    set_ints(conv, "pads", {2, 2, 2, 2});
    set_ints(conv, "strides", {1, 1});
    const std::string relu = "relu" + std::to_string(n);
    add_node(graph, "Relu", {layer}, relu);
    const std::string pool = "pool" + std::to_string(n);
    onnx::NodeProto& max_pool = add_node(graph, "MaxPool", {relu}, pool);
    set_ints(max_pool, "kernel_shape", {2, 2});
    set_ints(max_pool, "strides", {2, 2});
    return pool;
}

// `output = input · <layer>.weightᵀ + <layer>.bias`, as torch.onnx exports nn.Linear.
void add_linear(onnx::GraphProto& graph, const std::string& input, const std::string& layer,
                const std::string& output)
{
    onnx::NodeProto& gemm =
        add_node(graph, "Gemm", {input, layer + ".weight", layer + ".bias"}, output);
    set_int(gemm, "transB", 1);
}

onnx::ModelProto build_model(const gpu::nn::parameters& store, std::span<const float> values)
{
    onnx::ModelProto model;
    model.set_ir_version(ir_version);
    model.set_producer_name("cudagap-infer");
    model.set_producer_version(gpu::library_version().to_string());
    model.set_doc_string(
        "cudagap's Fashion-MNIST convnet (examples/research_training), exported by cudagap-infer");
    onnx::OperatorSetIdProto& opset = *model.add_opset_import();
    opset.set_domain("");
    opset.set_version(onnx_opset);

    onnx::GraphProto& graph = *model.mutable_graph();
    graph.set_name("cudagap_fashion_mnist_convnet");
    describe_batched(*graph.add_input(), "input", {1, 28, 28},
                     "28x28 grey images, NCHW: pixels/255, then (x - 0.2860) / 0.3530");
    for (const model_tensor& tensor : model_tensors()) {
        *graph.add_initializer() = initializer(store.info(tensor.name), values);
    }
    const std::string pooled = add_conv_block(graph, add_conv_block(graph, "input", 1), 2);
    set_int(add_node(graph, "Flatten", {pooled}, "flatten"), "axis", 1);
    add_linear(graph, "flatten", "fc1", "fc1");
    add_node(graph, "Relu", {"fc1"}, "relu3"); // dropout is the identity at inference
    add_linear(graph, "relu3", "fc2", "output");
    describe_batched(*graph.add_output(), "output", {10}, "logits of the 10 Fashion-MNIST classes");
    return model;
}

// ONNX's checker, then its strict shape inference (which also records every intermediate
// shape in the model, as torch.onnx.export does); either's refusal as std::runtime_error.
void check_model(onnx::ModelProto& model)
{
    try {
        onnx::checker::check_model(model);
        const onnx::ShapeInferenceOptions strict{/*check_type=*/true, /*error_mode=*/1,
                                                 /*data_prop=*/false};
        onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), strict);
    } catch (const std::exception& error) {
        throw std::runtime_error(std::string("infer::export_onnx: ONNX refused the model: ") +
                                 error.what());
    }
}

[[noreturn]] void throw_io(const char* what, const std::filesystem::path& path,
                           const std::filesystem::path& temporary, int error)
{
    throw std::filesystem::filesystem_error(std::string("infer::export_onnx: ") + what, path,
                                            temporary,
                                            std::error_code(error, std::generic_category()));
}

// A temporary file beside the target, removed unless it was renamed over the target.
class temporary_file {
public:
    explicit temporary_file(const std::filesystem::path& target)
    {
        // pid and a counter make the name unique between processes and threads; O_EXCL makes sure.
        static std::atomic<unsigned> counter{0};
        for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
            path_ = target;
            path_ += ".tmp" + std::to_string(::getpid()) + "." + std::to_string(counter++);
            fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd_ < 0 && errno != EEXIST) {
                break;
            }
        }
        if (fd_ < 0) {
            throw_io("cannot create a temporary file beside the target", target, path_, errno);
        }
    }
    temporary_file(const temporary_file&) = delete;
    temporary_file& operator=(const temporary_file&) = delete;
    ~temporary_file()
    {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        if (!renamed_) {
            ::unlink(path_.c_str());
        }
    }

    // Writes @p bytes, flushes them to the disk and renames the file over @p target.
    void commit(std::string_view bytes, const std::filesystem::path& target)
    {
        while (!bytes.empty()) {
            const ::ssize_t written = ::write(fd_, bytes.data(), bytes.size());
            if (written < 0 && errno != EINTR) {
                throw_io("cannot write the temporary file", target, path_, errno);
            }
            bytes.remove_prefix(written < 0 ? 0 : static_cast<std::size_t>(written));
        }
        // On the disk before the rename: a crash just after it must not leave a partial file.
        if (::fsync(fd_) != 0 || ::close(std::exchange(fd_, -1)) != 0) {
            throw_io("cannot flush the temporary file to the disk", target, path_, errno);
        }
        if (::rename(path_.c_str(), target.c_str()) != 0) {
            throw_io("cannot rename the temporary file over the target", target, path_, errno);
        }
        renamed_ = true;
    }

private:
    std::filesystem::path path_;
    int fd_ = -1;
    bool renamed_ = false;
};

#endif // CUDAGAP_INFER_HAVE_ONNX

} // namespace

bool onnx_export_available() noexcept
{
#ifdef CUDAGAP_INFER_HAVE_ONNX
    return true;
#else
    return false;
#endif
}

std::string onnx_export_unavailable_reason()
{
#ifdef CUDAGAP_INFER_HAVE_ONNX
    return std::string("this build has the ONNX library (ONNX ") + onnx::LAST_RELEASE_VERSION +
           "): ONNX export is available";
#else
    return "this program was built without the ONNX C++ library, so it cannot export ONNX. Install "
           "it and "
           "the protobuf headers it needs (Debian 12 or later, Ubuntu: apt-get install libonnx-dev "
           "libprotobuf-dev; ONNX 1.12 or later, for opset 17), then configure and build again: "
           "CMake's "
           "find_package(ONNX) finds it. The Python package onnx (pip install onnx) is not enough: "
           "it has no "
           "C++ library or CMake package to build against.";
#endif
}

void export_onnx(const gpu::nn::parameters& store, std::span<const float> values,
                 const std::filesystem::path& path)
{
    check_arguments(store, values);
#ifdef CUDAGAP_INFER_HAVE_ONNX
    onnx::ModelProto model = build_model(store, values);
    check_model(model);
    std::string bytes;
    if (!model.SerializeToString(&bytes)) {
        throw std::runtime_error("infer::export_onnx: protobuf could not serialise the model for " +
                                 path.string());
    }
    temporary_file file(path);
    file.commit(bytes, path);
#else
    static_cast<void>(path);
    throw std::runtime_error("infer::export_onnx: " + onnx_export_unavailable_reason());
#endif
}

} // namespace infer
