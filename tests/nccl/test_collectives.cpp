// gpu/nccl/collectives.hpp and group.hpp: the argument checks that come before any NCCL call
// and the group scope (no GPU needed), then the collectives on a real one-rank communicator,
// and on every local GPU when the host has two or more ([multi-gpu]).
#include <gpu/device.hpp>
#include <gpu/memory.hpp>
#include <gpu/nccl/collectives.hpp>
#include <gpu/nccl/error.hpp>
#include <gpu/nccl/group.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"
#include "test_support.hpp"

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

namespace {

namespace nccl = gpu::nccl;
using nccl::detail::collective_call;
using nccl::detail::operation;

// A call on fake addresses (the checks never dereference them): [send, send + send_count) and
// [recv, recv + recv_count) in one host array of floats.
collective_call call_of(operation kind, std::size_t send_at, std::size_t send_count,
                        std::size_t recv_at, std::size_t recv_count)
{
    static std::array<float, 4096> memory{};
    collective_call call;
    call.function = "f";
    call.kind = kind;
    call.send = memory.data() + send_at;
    call.recv = memory.data() + recv_at;
    call.send_count = send_count;
    call.recv_count = recv_count;
    call.element_size = sizeof(float);
    return call;
}

void check_ranks(const collective_call& call, int ranks, int rank = 0)
{
    nccl::detail::check_against_ranks(call, ranks, rank);
}

} // namespace

TEST_CASE("all_reduce needs equal counts, named when they differ, before the communicator is asked",
          "[nccl]")
{
    CHECK_THROWS_WITH(nccl::detail::check_arguments(call_of(operation::all_reduce, 0, 10, 100, 12)),
                      "f: the input holds 10 elements and the output 12 (they must be equal)");
    collective_call null_output = call_of(operation::all_reduce, 0, 4, 100, 4);
    null_output.recv = nullptr;
    CHECK_THROWS_WITH(nccl::detail::check_arguments(null_output), "f: null output for 4 elements");
    collective_call null_input = call_of(operation::all_gather, 0, 4, 100, 8);
    null_input.send = nullptr;
    CHECK_THROWS_WITH(nccl::detail::check_arguments(null_input), "f: null input for 4 elements");
    collective_call bad_op = call_of(operation::reduce_scatter, 0, 8, 100, 4);
    bad_op.op = static_cast<nccl::reduction>(9); // an integer cast to the enum
    CHECK_THROWS_WITH(nccl::detail::check_arguments(bad_op),
                      "f: reduction 9 is not a gpu::nccl::reduction");

    // Through the public function: a bad argument stays a bad argument on an empty communicator.
    const nccl::communicator empty;
    std::vector<float> send(10);
    std::vector<float> recv(12);
    CHECK_THROWS_WITH(nccl::all_reduce(empty, std::span<const float>(send), std::span<float>(recv),
                                       nccl::reduction::sum, gpu::legacy_default_stream),
                      "gpu::nccl::all_reduce: the input holds 10 elements and the output 12 (they "
                      "must be equal)");
    recv.resize(10);
    CHECK_THROWS_WITH(nccl::all_reduce(empty, std::span<const float>(send), std::span<float>(recv),
                                       nccl::reduction::sum, gpu::legacy_default_stream),
                      StartsWith("gpu::nccl::all_reduce: the gpu::nccl::communicator is empty "
                                 "(moved from or released"));
    CHECK_THROWS_AS(nccl::all_gather(empty, std::span<const float>(send), std::span<float>(recv),
                                     gpu::legacy_default_stream),
                    std::logic_error);
    CHECK_THROWS_AS(nccl::broadcast(empty, std::span<float>(recv), 0, gpu::legacy_default_stream),
                    std::logic_error);
}

TEST_CASE("all_gather and reduce_scatter need out = in x ranks, with the counts and ranks named",
          "[nccl]")
{
    CHECK_NOTHROW(check_ranks(call_of(operation::all_gather, 0, 3, 100, 12), 4));
    CHECK_THROWS_WITH(
        check_ranks(call_of(operation::all_gather, 0, 3, 100, 11), 4),
        "f: the output must hold the input times the number of ranks: 11 elements for 3 x 4 ranks");
    CHECK_NOTHROW(check_ranks(call_of(operation::reduce_scatter, 0, 12, 100, 3), 4));
    CHECK_THROWS_WITH(
        check_ranks(call_of(operation::reduce_scatter, 0, 12, 100, 4), 4),
        "f: the input must hold the output times the number of ranks: 12 elements for 4 x 4 ranks");
    // A product that would overflow is a mismatch, not a wrap-around.
    CHECK_THROWS_AS(check_ranks(call_of(operation::all_gather, 0, std::size_t{1} << 62, 100, 0), 4),
                    std::invalid_argument);

    collective_call in_place = call_of(operation::all_gather, 0, 0, 0, 10);
    in_place.in_place = true;
    CHECK_THROWS_WITH(check_ranks(in_place, 4),
                      "f: 10 elements do not split into 4 equal parts, one per rank");
    in_place.recv_count = 12;
    CHECK_NOTHROW(check_ranks(in_place, 4));
}

TEST_CASE("broadcast needs a root among the ranks, and equal counts at the root only", "[nccl]")
{
    collective_call call = call_of(operation::broadcast, 0, 8, 100, 8);
    call.root = 4;
    CHECK_THROWS_WITH(check_ranks(call, 4), "f: root 4 is not a rank of this communicator of 4");
    call.root = -1;
    CHECK_THROWS_AS(check_ranks(call, 4), std::invalid_argument);
    call.root = 1;
    call.send_count = 7;
    CHECK_THROWS_WITH(check_ranks(call, 4, 1),
                      "f: the root's input holds 7 elements and the output 8 (they must be equal)");
    call.send = nullptr; // elsewhere the input is not read
    call.send_count = 0;
    CHECK_NOTHROW(check_ranks(call, 4, 2));
}

TEST_CASE("overlapping ranges are refused unless they are NCCL's in-place layout", "[nccl]")
{
    CHECK_THROWS_WITH(check_ranks(call_of(operation::all_reduce, 0, 10, 5, 10), 1),
                      StartsWith("f: the input and the output overlap"));
    CHECK_NOTHROW(check_ranks(call_of(operation::all_reduce, 7, 10, 7, 10), 1)); // the same range
    // all_gather in place: rank 2 of 4 sends from its part of the output.
    CHECK_NOTHROW(check_ranks(call_of(operation::all_gather, 100 + 2 * 3, 3, 100, 12), 4, 2));
    CHECK_THROWS_AS(check_ranks(call_of(operation::all_gather, 100 + 1 * 3, 3, 100, 12), 4, 2),
                    std::invalid_argument);
    // reduce_scatter in place: rank 3 of 4 receives into its part of the input.
    CHECK_NOTHROW(check_ranks(call_of(operation::reduce_scatter, 100, 12, 100 + 3 * 3, 3), 4, 3));
    CHECK_THROWS_AS(check_ranks(call_of(operation::reduce_scatter, 100, 12, 100 + 3 * 3, 3), 4, 0),
                    std::invalid_argument);
}

TEST_CASE("a group scope ends on every path, nests, and refuses a second end", "[nccl]")
{
    {
        nccl::group_scope group;
        CHECK(group.open());
        group.end();
        CHECK_FALSE(group.open());
        CHECK_THROWS_WITH(group.end(), "gpu::nccl::group_scope::end: the group was already ended");
    }
    {
        nccl::group_scope outer;
        {
            nccl::group_scope inner;
            inner.end();
        }
        outer.end();
    }
    CHECK_THROWS_WITH(nccl::group([] { throw std::runtime_error("work failed"); }), "work failed");
    try {
        const nccl::group_scope left_open;
        throw std::runtime_error("unwinding");
    } catch (const std::runtime_error&) {}
    // Every group above ended: NCCL's own depth is 0 again, so a bare ncclGroupEnd is refused.
    CHECK(ncclGroupEnd() == ncclInvalidUsage);
    CHECK_NOTHROW(nccl::group([] {}));
}

namespace {

// A one-rank communicator on device 0 and a stream there.
struct one_rank {
    gpu::device dev{0};
    nccl::communicator comm = nccl::communicator::init_rank(nccl::unique_id::create(), 0, 1, dev);
    gpu::stream stream{gpu::stream_flags::non_blocking};
};

// ncclAvg multiplies each rank's value by float(1 / n) before summing: for n = 5 to 7 the
// result can be one ulp from the exact average, so it is compared with a relative tolerance.
void check_average(const std::vector<float>& got, float expected)
{
    for (const float value : got) {
        CHECK(std::abs(value - expected) <= 1e-5F * std::abs(expected));
    }
}

template <class T>
std::vector<T> values(std::size_t n, int seed)
{
    std::vector<T> out(n);
    for (std::size_t i = 0; i < n; ++i) {
        out[i] =
            static_cast<T>(static_cast<int>((i * 7 + static_cast<std::size_t>(seed)) % 61) - 30);
    }
    return out;
}

} // namespace

TEST_CASE("one rank: all_reduce with every reduction, out of place and in place", "[nccl][gpu]")
{
    one_rank r;
    const std::vector<float> input = gpu::test::random_floats(1000, 11);
    const auto send = gpu::device_buffer<float>::from_host(input, r.stream);
    for (const nccl::reduction op :
         {nccl::reduction::sum, nccl::reduction::avg, nccl::reduction::max, nccl::reduction::min,
          nccl::reduction::product}) {
        INFO(nccl::to_string(op));
        auto recv = gpu::device_buffer<float>::from_host(gpu::test::poisoned(1000), r.stream);
        nccl::all_reduce(r.comm, send, recv, op, r.stream);
        CHECK(recv.to_host() == input); // one rank: every reduction is the input itself
        auto data = gpu::device_buffer<float>::from_host(input, r.stream);
        nccl::all_reduce(r.comm, data, op, r.stream);
        CHECK(data.to_host() == input);
    }
    // Integers and 16-bit floats, bit for bit.
    const std::vector<std::int64_t> big = values<std::int64_t>(77, 3);
    auto ints = gpu::device_buffer<std::int64_t>::from_host(big, r.stream);
    nccl::all_reduce(r.comm, ints, nccl::reduction::max, r.stream);
    CHECK(ints.to_host() == big);
    const std::vector<std::uint8_t> small = values<std::uint8_t>(33, 5);
    auto bytes = gpu::device_buffer<std::uint8_t>::from_host(small, r.stream);
    nccl::all_reduce(r.comm, bytes, nccl::reduction::sum, r.stream);
    CHECK(bytes.to_host() == small);
}

TEST_CASE("one rank: broadcast, all_gather and reduce_scatter, and a view of a buffer",
          "[nccl][gpu]")
{
    one_rank r;
    const std::vector<double> input = gpu::test::random_uniform<double>(256, 12);
    const auto send = gpu::device_buffer<double>::from_host(input, r.stream);
    auto recv = gpu::device_buffer<double>::from_host(gpu::test::poisoned<double>(256), r.stream);
    nccl::broadcast(r.comm, send, recv, 0, r.stream);
    CHECK(recv.to_host() == input);
    recv.copy_from_host(gpu::test::poisoned<double>(256));
    nccl::all_gather(r.comm, send, recv, r.stream);
    CHECK(recv.to_host() == input);
    recv.copy_from_host(gpu::test::poisoned<double>(256));
    nccl::reduce_scatter(r.comm, send, recv, nccl::reduction::sum, r.stream);
    CHECK(recv.to_host() == input);
    auto data = gpu::device_buffer<double>::from_host(input, r.stream);
    nccl::broadcast(r.comm, data, 0, r.stream);
    nccl::all_gather_in_place(r.comm, data, r.stream);
    nccl::reduce_scatter_in_place(r.comm, data, nccl::reduction::avg, r.stream);
    CHECK(data.to_host() == input);

    // A view: the middle of a buffer, the rest untouched.
    const std::vector<float> floats = gpu::test::random_floats(100, 13);
    const auto source = gpu::device_buffer<float>::from_host(floats, r.stream);
    auto target = gpu::device_buffer<float>::from_host(std::vector<float>(100, 5.0F), r.stream);
    nccl::all_reduce(r.comm, std::span<const float>(source.data() + 10, 50),
                     std::span<float>(target.data() + 10, 50), nccl::reduction::sum, r.stream);
    const std::vector<float> out = target.to_host();
    for (std::size_t i = 0; i < out.size(); ++i) {
        INFO(i);
        CHECK(out[i] == (i >= 10 && i < 60 ? floats[i] : 5.0F));
    }
    // NCCL's checks sit behind cudagap's: a broadcast from a rank that does not exist.
    CHECK_THROWS_WITH(nccl::broadcast(r.comm, data, 1, r.stream),
                      "gpu::nccl::broadcast: root 1 is not a rank of this communicator of 1");
}

TEST_CASE("one rank: collectives queued in a group run when it ends", "[nccl][gpu]")
{
    one_rank r;
    const std::vector<float> a = gpu::test::random_floats(4096, 21);
    const std::vector<__nv_bfloat16> b(512, __float2bfloat16(1.5F));
    const auto a_in = gpu::device_buffer<float>::from_host(a, r.stream);
    const auto b_in = gpu::device_buffer<__nv_bfloat16>::from_host(b, r.stream);
    auto a_out = gpu::device_buffer<float>::from_host(gpu::test::poisoned(4096), r.stream);
    auto b_out = gpu::device_buffer<__nv_bfloat16>(512, r.stream);
    b_out.fill_zero();
    nccl::group([&] {
        nccl::all_reduce(r.comm, a_in, a_out, nccl::reduction::sum, r.stream);
        nccl::all_gather(r.comm, b_in, b_out, r.stream);
    });
    CHECK(a_out.to_host() == a);
    const std::vector<__nv_bfloat16> b_back = b_out.to_host();
    for (const __nv_bfloat16 value : b_back) {
        CHECK(__bfloat162float(value) == 1.5F);
    }
}

TEST_CASE("every local GPU: the collectives reduce, broadcast, gather and scatter across ranks",
          "[nccl][multi-gpu]")
{
    const std::vector<gpu::device> devices = gpu::devices();
    REQUIRE(devices.size() >= 2);
    std::vector<nccl::communicator> comms = nccl::communicator::init_all(devices);
    const std::size_t n = comms.size();
    const std::size_t count = 1024;
    // Rank r holds r + 1 everywhere.
    std::vector<gpu::stream> streams;
    std::vector<gpu::device_buffer<float>> inputs, sums, averages, minima, gathered, scattered;
    for (std::size_t rank = 0; rank < n; ++rank) {
        const gpu::scoped_device on(devices[rank]);
        streams.emplace_back(gpu::stream_flags::non_blocking);
        const std::vector<float> mine(count, static_cast<float>(rank + 1));
        inputs.push_back(gpu::device_buffer<float>::from_host(mine, streams[rank]));
        averages.push_back(gpu::device_buffer<float>::from_host(mine, streams[rank]));
        minima.push_back(gpu::device_buffer<float>::from_host(mine, streams[rank]));
        sums.emplace_back(count, streams[rank]);
        gathered.emplace_back(count * n, streams[rank]);
        scattered.emplace_back(count, streams[rank]);
    }
    nccl::group([&] {
        for (std::size_t rank = 0; rank < n; ++rank) {
            nccl::all_reduce(comms[rank], inputs[rank], sums[rank], nccl::reduction::sum,
                             streams[rank]);
            nccl::all_reduce(comms[rank], averages[rank], nccl::reduction::avg, streams[rank]);
            nccl::all_reduce(comms[rank], minima[rank], nccl::reduction::min, streams[rank]);
            nccl::all_gather(comms[rank], inputs[rank], gathered[rank], streams[rank]);
        }
    });
    // Each rank's part of the elementwise max of the gathered values, then rank 1's to everyone.
    nccl::group([&] {
        for (std::size_t rank = 0; rank < n; ++rank) {
            nccl::reduce_scatter(comms[rank], gathered[rank], scattered[rank], nccl::reduction::max,
                                 streams[rank]);
            nccl::broadcast(comms[rank], inputs[rank], 1, streams[rank]);
        }
    });
    const auto ranks = static_cast<float>(n);
    for (std::size_t rank = 0; rank < n; ++rank) {
        const gpu::scoped_device on(devices[rank]);
        INFO("rank " << rank << " of " << n);
        CHECK(sums[rank].to_host() == std::vector<float>(count, ranks * (ranks + 1) / 2));
        check_average(averages[rank].to_host(), (ranks + 1) / 2);
        CHECK(minima[rank].to_host() == std::vector<float>(count, 1.0F));
        const std::vector<float> all = gathered[rank].to_host();
        for (std::size_t i = 0; i < all.size(); i += 97) {
            CHECK(all[i] == static_cast<float>(i / count + 1));
        }
        CHECK(scattered[rank].to_host() == std::vector<float>(count, static_cast<float>(rank + 1)));
        CHECK(inputs[rank].to_host() == std::vector<float>(count, 2.0F));
    }
    // The ranks close together, well within the close timeout (one at a time, each would wait
    // for the others until it ran out).
    const auto start = std::chrono::steady_clock::now();
    nccl::destroy_all(comms);
    CHECK(std::chrono::steady_clock::now() - start <
          nccl::communicator_options{}.close_timeout / 2);
}
