// Runs cudagap-train twice with the same arguments, eagerly and with --graph (each writing its
// --json report to a file), and checks that the runs agree. On a GPU: every epoch's mean loss
// within a relative tolerance and test accuracy within an absolute one. Not bit for bit: the
// production profile times the convolution algorithms in each process, and two processes may
// pick different (equally valid) algorithms whose sums round differently; the same objects in
// one process agree bit for bit (tests/nn/test_captured_step.cpp). Without a GPU: both runs
// exit 0 and report the same data and the same reason. An epoch whose mean loss is null (the
// FP16 grad scaler skipped every step) has no loss to compare: both runs null agree, one null
// is a difference, said in those words.
// Usage: cudagap_compare_train_runs WORKDIR LOSS_TOL ACCURACY_TOL PROGRAM ARGS...
//        cudagap_compare_train_runs --reports EAGER.json GRAPH.json LOSS_TOL ACCURACY_TOL
//          (compares two reports already written: how the tests check the comparison itself)
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

std::string quoted(const std::string& text)
{
    return "'" + text + "'";
}

nlohmann::json read_report(const std::filesystem::path& path)
{
    std::ifstream file(path);
    if (!file) {
        throw std::runtime_error("cannot read the report " + path.string());
    }
    return nlohmann::json::parse(file);
}

nlohmann::json run(const std::filesystem::path& json_path, const std::vector<std::string>& command)
{
    std::string line;
    for (const std::string& part : command) {
        line += quoted(part) + " ";
    }
    line += "--quiet --json " + quoted(json_path.string());
    std::printf("running: %s\n", line.c_str());
    std::fflush(stdout);
    const int status = std::system(line.c_str());
    if (status != 0) {
        throw std::runtime_error("the run exited with status " + std::to_string(status) + ": " +
                                 line);
    }
    return read_report(json_path);
}

// The epoch's mean loss in each run; false when neither has one (every step skipped in both).
// One run without a loss and the other with one is a difference, thrown.
bool losses_of(const nlohmann::json& a, const nlohmann::json& b, std::size_t epoch, double& loss_a,
               double& loss_b)
{
    const nlohmann::json& la = a.at("mean_loss");
    const nlohmann::json& lb = b.at("mean_loss");
    if (la.is_null() != lb.is_null()) {
        throw std::runtime_error(
            "epoch " + std::to_string(epoch) + ": every step skipped " +
            (la.is_null() ? "eager but not with --graph" : "with --graph but not eager") +
            " (the grad scaler's mean_loss is null in one report only)");
    }
    if (la.is_null()) {
        return false;
    }
    loss_a = la.get<double>();
    loss_b = lb.get<double>();
    return true;
}

void compare(const nlohmann::json& eager, const nlohmann::json& graph, double loss_tolerance,
             double accuracy_tolerance)
{
    const auto& a = eager.at("epochs");
    const auto& b = graph.at("epochs");
    if (a.empty() || a.size() != b.size()) {
        throw std::runtime_error("epochs: " + std::to_string(a.size()) + " eager, " +
                                 std::to_string(b.size()) + " with --graph");
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        double loss_a = 0.0;
        double loss_b = 0.0;
        const bool has_loss = losses_of(a[i], b[i], i + 1, loss_a, loss_b);
        const double acc_a = a[i].at("test_accuracy"), acc_b = b[i].at("test_accuracy");
        if (has_loss) {
            std::printf(
                "epoch %zu: loss %.6f eager, %.6f --graph; accuracy %.4f eager, %.4f --graph\n",
                i + 1, loss_a, loss_b, acc_a, acc_b);
        } else {
            std::printf(
                "epoch %zu: every step skipped in both runs (no mean loss); accuracy %.4f eager, "
                "%.4f --graph\n",
                i + 1, acc_a, acc_b);
        }
        if (!(std::abs(loss_a - loss_b) <= loss_tolerance * std::abs(loss_a)) ||
            !(std::abs(acc_a - acc_b) <= accuracy_tolerance)) {
            throw std::runtime_error("epoch " + std::to_string(i + 1) +
                                     " differs beyond the tolerances (loss " +
                                     std::to_string(loss_tolerance) + " relative, accuracy " +
                                     std::to_string(accuracy_tolerance) + ")");
        }
    }
}

// The checks on the two reports, an eager run's and a --graph run's.
void check_reports(const nlohmann::json& eager, const nlohmann::json& graph, double loss_tolerance,
                   double accuracy_tolerance)
{
    if (eager.at("graph") != false || graph.at("graph") != true) {
        throw std::runtime_error("the reports do not say eager, then --graph");
    }
    if (eager.at("gpu_available") != graph.at("gpu_available")) {
        throw std::runtime_error("one run found a GPU, the other did not");
    }
    if (eager.at("gpu_available") == false) {
        for (const char* member : {"train_images", "test_images", "seed", "batch_size", "reason"}) {
            if (eager.at(member) != graph.at(member)) {
                throw std::runtime_error(std::string("without a GPU the reports differ in ") +
                                         member);
            }
        }
        std::printf("no GPU: both runs checked the data and gave the same reason\n");
        return;
    }
    compare(eager, graph, loss_tolerance, accuracy_tolerance);
}

} // namespace

int main(int argc, char* argv[])
{
    const bool reports = argc > 1 && std::string(argv[1]) == "--reports";
    if (argc < 5 || (reports && argc != 6)) {
        std::fprintf(
            stderr,
            "usage: cudagap_compare_train_runs WORKDIR LOSS_TOL ACCURACY_TOL PROGRAM ARGS...\n"
            "       cudagap_compare_train_runs --reports EAGER.json GRAPH.json LOSS_TOL "
            "ACCURACY_TOL\n");
        return 2;
    }
    try {
        if (reports) {
            check_reports(read_report(argv[2]), read_report(argv[3]), std::stod(argv[4]),
                          std::stod(argv[5]));
            return 0;
        }
        const std::filesystem::path work = argv[1];
        std::filesystem::create_directories(work);
        const std::vector<std::string> command(argv + 4, argv + argc);
        std::vector<std::string> with_graph = command;
        with_graph.emplace_back("--graph");
        const nlohmann::json eager = run(work / "eager.json", command);
        const nlohmann::json graph = run(work / "graph.json", with_graph);
        check_reports(eager, graph, std::stod(argv[2]), std::stod(argv[3]));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap_compare_train_runs: %s\n", e.what());
        return 1;
    }
}
