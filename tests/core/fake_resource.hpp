// A memory resource for host tests of the resource machinery: host memory that calls itself
// device-accessible, counts its calls, and fails on request (out of memory, or another CUDA
// error), so that adaptors and the ledger run for real without a GPU.
#pragma once

#include <gpu/error.hpp>
#include <gpu/memory_resource.hpp>
#include <gpu/stream.hpp>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <source_location>
#include <stdexcept>

namespace gpu::test {

class fake_resource {
public:
    explicit fake_resource(int id = 0) noexcept : id_(id) {}
    fake_resource(const fake_resource& other) noexcept : id_(other.id_) {}
    fake_resource& operator=(const fake_resource& other) noexcept
    {
        id_ = other.id_;
        return *this;
    }

    void* allocate(gpu::stream_ref stream, std::size_t bytes, std::size_t alignment)
    {
        ++allocations;
        last_stream = stream.get();
        last_alignment = alignment;
        if (fail_out_of_memory > 0) {
            --fail_out_of_memory;
            throw gpu::out_of_memory("fake_resource::allocate", bytes, 0, 0, -1,
                                     std::source_location::current());
        }
        if (fail_other > 0) {
            --fail_other;
            throw gpu::cuda_error(cudaErrorInvalidValue, "fake_resource::allocate", "", -1,
                                  std::source_location::current());
        }
        if (bytes == 0) {
            return nullptr;
        }
        void* pointer =
            std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
        if (pointer == nullptr) {
            throw std::bad_alloc();
        }
        live_bytes += bytes;
        return pointer;
    }

    void deallocate(gpu::stream_ref stream, void* pointer, std::size_t bytes, std::size_t) noexcept
    {
        ++deallocations;
        last_stream = stream.get();
        if (pointer != nullptr) {
            live_bytes -= bytes;
            std::free(pointer);
        }
    }

    friend bool operator==(const fake_resource& a, const fake_resource& b) noexcept
    {
        return a.id_ == b.id_;
    }
    friend void get_property(const fake_resource&, gpu::device_accessible) noexcept {}

    std::atomic<int> allocations{0};
    std::atomic<int> deallocations{0};
    std::atomic<long long> live_bytes{0};
    std::atomic<int> fail_out_of_memory{0};
    std::atomic<int> fail_other{0};
    cudaStream_t last_stream = nullptr;
    std::size_t last_alignment = 0;

private:
    int id_;
};

// A stream handle for tests that never reaches CUDA (the fakes only record it).
inline gpu::stream_ref fake_stream() noexcept
{
    static int tag = 0;
    return gpu::stream_ref(reinterpret_cast<cudaStream_t>(&tag));
}

} // namespace gpu::test
