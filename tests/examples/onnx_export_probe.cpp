// Exercises cudagap-infer's ONNX exporter (examples/production_inference/onnx_export.hpp) on the
// host, for ctest (tests/examples/onnx_export.cmake), until and beside cudagap-infer itself.
//
//   cudagap_onnx_export_probe export OUT [--seed S | --checkpoint FILE]   writes OUT
//   cudagap_onnx_export_probe check FILE [--seed S | --checkpoint FILE]   re-reads FILE with ONNX's
//       parser and checks it: ONNX's checker, IR 8, opset 17, input/output names, types and the
//       dynamic axis, the nodes, every initializer's shape and bytes against the values
//   cudagap_onnx_export_probe save-checkpoint OUT [--seed S]             a cudagap-train-style model file
//   cudagap_onnx_export_probe refuse CASE DIR   exports into the empty folder DIR something the
//       exporter must refuse (CASE: missing, misshaped, extra, values, folder, no-folder), prints
//       "refused: <what()>", and checks that DIR holds exactly what it held before
//
// The model's store is made with gpu::nn's layers, as cudagap-train makes it (host only: the store
// is never allocated). Exit status: 0 done, 1 a failure (said on stderr), 2 bad arguments.
#include "onnx_export.hpp"

#include <gpu/nn/checkpoint.hpp>
#include <gpu/nn/conv2d.hpp>
#include <gpu/nn/linear.hpp>
#include <gpu/nn/parameters.hpp>

#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#ifdef CUDAGAP_INFER_HAVE_ONNX
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#endif

namespace {

namespace fs = std::filesystem;

// The convnet's parameters as cudagap-train's layers register them; @p variant breaks it for the
// refusal cases. The layers go out of scope; what they registered stays in the store.
void register_model(gpu::nn::parameters& store, std::string_view variant = {})
{
    const gpu::nn::conv2d conv1(store, "conv1", 1, 32, 5, {.padding = {2, 2}});
    const gpu::nn::conv2d conv2(store, "conv2", variant == "misshaped" ? 16 : 32, 64, 5,
                                {.padding = {2, 2}});
    const gpu::nn::linear fc1(store, "fc1", 64 * 7 * 7, 1024, {.relu = true});
    const gpu::nn::linear fc2(store, "fc2", 1024, 10, {.bias = variant != "missing"});
    if (variant == "extra") {
        const gpu::nn::linear fc3(store, "fc3", 10, 10);
    }
}

// The values a command works on: a checkpoint's, or the store's initial values for a seed.
struct source {
    std::uint64_t seed = 42;
    std::optional<fs::path> checkpoint;

    [[nodiscard]] std::vector<float> values(const gpu::nn::parameters& store) const
    {
        return checkpoint ? gpu::nn::read_parameters(*checkpoint, store)
                          : store.initial_values(seed);
    }
};

source parse_source(int argc, char** argv, int first)
{
    source result;
    for (int i = first; i < argc; i += 2) {
        const std::string_view option = argv[i];
        if (i + 1 >= argc || (option != "--seed" && option != "--checkpoint")) {
            throw std::invalid_argument("expected --seed S or --checkpoint FILE, got '" +
                                        std::string(option) + "'");
        }
        if (option == "--seed") {
            result.seed = std::stoull(argv[i + 1]);
        } else {
            result.checkpoint = argv[i + 1];
        }
    }
    return result;
}

std::set<fs::path> folder_contents(const fs::path& folder)
{
    std::set<fs::path> entries;
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
        entries.insert(entry.path());
    }
    return entries;
}

// One refusal: what the exporter threw, then whether it left anything behind.
int refuse(std::string_view which, const fs::path& folder)
{
    const std::set<std::string_view> cases{"missing", "misshaped", "extra",
                                           "values",  "folder",    "no-folder"};
    if (!cases.contains(which)) {
        throw std::invalid_argument("unknown refusal case '" + std::string(which) + "'");
    }
    fs::remove_all(folder);
    fs::create_directories(folder);
    gpu::nn::parameters store;
    register_model(store, which);
    std::vector<float> values = store.initial_values(1);
    fs::path target = folder / "model.onnx";
    if (which == "values") {
        values.pop_back();
    } else if (which == "folder") {
        fs::create_directory(target); // a folder where the file should go: the rename fails
    } else if (which == "no-folder") {
        target = folder / "no-such-folder" / "model.onnx";
    }
    const std::set<fs::path> before = folder_contents(folder);
    try {
        infer::export_onnx(store, values, target);
        std::cerr << "the exporter did not refuse case '" << which << "'\n";
        return 1;
    } catch (const std::exception& error) {
        std::cout << "refused: " << error.what() << '\n';
    }
    if (folder_contents(folder) != before || (which != "folder" && fs::exists(target))) {
        std::cerr << "the refused export left something behind in " << folder << '\n';
        return 1;
    }
    std::cout << "nothing left behind in " << folder.string() << '\n';
    return 0;
}

#ifdef CUDAGAP_INFER_HAVE_ONNX

void expect(bool condition, const std::string& what)
{
    if (!condition) {
        throw std::runtime_error("the exported model differs: " + what);
    }
}

// "batch,1,28,28" for a value's tensor shape (dim_param or dim_value per dimension).
std::string shape_of(const onnx::ValueInfoProto& value)
{
    std::string text;
    for (const auto& dim : value.type().tensor_type().shape().dim()) {
        text += (text.empty() ? "" : ",") +
                (dim.has_dim_param() ? dim.dim_param() : std::to_string(dim.dim_value()));
    }
    return text;
}

void check_interface(const onnx::ModelProto& model)
{
    expect(model.ir_version() == 8,
           "IR version " + std::to_string(model.ir_version()) + ", expected 8");
    expect(model.opset_import_size() == 1 && model.opset_import(0).domain().empty() &&
               model.opset_import(0).version() == 17,
           "the opset import is not the default domain's opset 17");
    const onnx::GraphProto& graph = model.graph();
    expect(graph.input_size() == 1 && graph.input(0).name() == "input",
           "the graph's inputs are not 'input' alone");
    expect(graph.output_size() == 1 && graph.output(0).name() == "output",
           "the graph's outputs are not 'output' alone");
    for (const onnx::ValueInfoProto* value : {&graph.input(0), &graph.output(0)}) {
        expect(value->type().tensor_type().elem_type() == onnx::TensorProto_DataType_FLOAT,
               value->name() + " is not float");
    }
    expect(shape_of(graph.input(0)) == "batch,1,28,28", "input shape " + shape_of(graph.input(0)));
    expect(shape_of(graph.output(0)) == "batch,10", "output shape " + shape_of(graph.output(0)));
    std::string ops;
    for (const onnx::NodeProto& node : graph.node()) {
        ops += (ops.empty() ? "" : " ") + node.op_type();
    }
    expect(ops == "Conv Relu MaxPool Conv Relu MaxPool Flatten Gemm Relu Gemm", "nodes " + ops);
}

void check_initializers(const onnx::GraphProto& graph, const gpu::nn::parameters& store,
                        const std::vector<float>& values)
{
    expect(static_cast<std::size_t>(graph.initializer_size()) == store.size(),
           std::to_string(graph.initializer_size()) + " initializers");
    for (const onnx::TensorProto& tensor : graph.initializer()) {
        const auto index = store.find(tensor.name());
        expect(index.has_value(),
               "an initializer named '" + tensor.name() + "', which the model does not have");
        const gpu::nn::parameter_info& info = store.info(*index);
        const std::vector<std::int64_t> dims(tensor.dims().begin(), tensor.dims().end());
        expect(dims == info.shape && tensor.data_type() == onnx::TensorProto_DataType_FLOAT,
               "initializer '" + info.name + "' has another shape or type");
        expect(tensor.raw_data().size() == info.count * sizeof(float) &&
                   std::memcmp(tensor.raw_data().data(), values.data() + info.offset,
                               info.count * sizeof(float)) == 0,
               "initializer '" + info.name + "' holds other values");
    }
}

int check(const fs::path& file, const source& from)
{
    onnx::checker::check_model(file.string()); // reads the file itself
    onnx::ModelProto model;
    std::ifstream in(file, std::ios::binary);
    expect(in && model.ParseFromIstream(&in), "ONNX's parser cannot read " + file.string());
    gpu::nn::parameters store;
    register_model(store);
    check_interface(model);
    check_initializers(model.graph(), store, from.values(store));
    std::cout << "checked " << file.string()
              << ": IR 8, opset 17, input [batch,1,28,28], output [batch,10], "
              << model.graph().node_size() << " nodes, " << model.graph().initializer_size()
              << " initializers equal to the values\n";
    return 0;
}

#endif // CUDAGAP_INFER_HAVE_ONNX

int run(int argc, char** argv)
{
    const std::string_view command = argc > 2 ? argv[1] : "";
    const fs::path path = argc > 2 ? argv[2] : "";
    if (command == "refuse" && argc == 4) {
        return refuse(argv[2], argv[3]);
    }
    gpu::nn::parameters store;
    register_model(store);
    if (command == "export") {
        infer::export_onnx(store, parse_source(argc, argv, 3).values(store), path);
        std::cout << "exported " << path.string() << " (" << fs::file_size(path) << " bytes, opset "
                  << infer::onnx_opset << ")\n";
        return 0;
    }
    if (command == "save-checkpoint") {
        gpu::nn::write_parameters(path, store, parse_source(argc, argv, 3).values(store));
        std::cout << "saved " << path.string() << '\n';
        return 0;
    }
#ifdef CUDAGAP_INFER_HAVE_ONNX
    if (command == "check") {
        return check(path, parse_source(argc, argv, 3));
    }
#endif
    throw std::invalid_argument(
        "usage: cudagap_onnx_export_probe export|check|save-checkpoint PATH "
        "[--seed S | --checkpoint FILE], or refuse CASE DIR");
}

} // namespace

int main(int argc, char** argv)
{
    try {
        return run(argc, argv);
    } catch (const std::invalid_argument& error) {
        std::cerr << "cudagap_onnx_export_probe: " << error.what() << '\n';
        return 2;
    } catch (const std::exception& error) {
        std::cerr << "cudagap_onnx_export_probe: " << error.what() << '\n';
        return 1;
    }
}
