/// @file ledger_resource.hpp
/// @brief `ledger_resource`: the adaptor that records every allocation of its upstream in a
/// `gpu::memory_ledger`, under a tag, so that the ledger's table says who holds the memory.
#pragma once

#include <gpu/device.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_resource.hpp>
#include <gpu/memory_tag.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <optional>
#include <utility>

namespace gpu {

/// @brief Records each allocation of @p Upstream in a ledger, on a device, under the tag the
/// resource was given or else the calling thread's `memory_tag_scope` (`current_memory_tag`):
/// a resource made for one purpose carries its tag, a shared one (a device's default) takes the
/// allocating code's.
///
/// A free of a pointer the ledger does not know is refused: it is counted and reported, and not
/// passed on to the upstream (see `memory_ledger`). The ledger uses the size recorded at
/// allocation. The cost per allocation and free is the ledger's (bench/alloc, "ledger" cases).
/// Stack one ledger resource per allocation path: two stacked record the same pointer twice.
/// @tparam Upstream the resource that allocates
template <memory_resource Upstream>
class ledger_resource {
public:
    /// @brief Records @p upstream's allocations on @p device (`memory_ledger::host` for host
    /// memory) of @p ledger, under @p tag (none: the thread's scope).
    /// @throws std::invalid_argument for a device the ledger does not count
    ledger_resource(Upstream upstream, int device, std::optional<memory_tag> tag = std::nullopt,
                    memory_ledger& ledger = memory_ledger::global())
        : upstream_(std::move(upstream)), ledger_(&ledger), device_(device), tag_(tag)
    {
        detail::check_ledger_device(device);
    }

    /// @brief Records on @p dev (see the other constructor).
    ledger_resource(Upstream upstream, gpu::device dev,
                    std::optional<memory_tag> tag = std::nullopt,
                    memory_ledger& ledger = memory_ledger::global())
        : ledger_resource(std::move(upstream), dev.id(), tag, ledger)
    {}

    /// @brief Allocates from the upstream and records the pointer (0 bytes: nothing recorded).
    /// @throws what the upstream throws; std::bad_alloc when the ledger cannot grow (the
    /// memory is then given back to the upstream)
    [[nodiscard]] void* allocate(stream_ref stream, std::size_t bytes,
                                 std::size_t alignment = default_alignment)
    {
        void* pointer = detail::allocate_with(upstream_, stream, bytes, alignment);
        if (pointer != nullptr) {
            try {
                ledger_->record_allocation(device_, pointer, bytes,
                                           tag_ ? *tag_ : current_memory_tag());
            } catch (...) {
                detail::deallocate_with(upstream_, stream, pointer, bytes, alignment);
                throw;
            }
        }
        return pointer;
    }

    /// @brief Takes @p pointer out of the ledger and frees it through the upstream; a pointer
    /// the ledger does not know is refused (not freed). A null pointer frees nothing.
    void deallocate(stream_ref stream, void* pointer, std::size_t bytes,
                    std::size_t alignment = default_alignment) noexcept
    {
        if (pointer == nullptr || !ledger_->record_free(device_, pointer)) {
            return;
        }
        detail::deallocate_with(upstream_, stream, pointer, bytes, alignment);
    }

    /// @brief The upstream.
    [[nodiscard]] Upstream& upstream() noexcept { return upstream_; }
    /// @brief The ledger it records in.
    [[nodiscard]] memory_ledger& ledger() const noexcept { return *ledger_; }
    /// @brief The device it records on.
    [[nodiscard]] int device_id() const noexcept { return device_; }
    /// @brief Its own tag, or nothing when it takes the thread's.
    [[nodiscard]] std::optional<memory_tag> tag() const noexcept { return tag_; }

    /// @brief Equal when both record in one ledger, on one device, under one tag, over equal
    /// upstreams: memory from either may be freed through the other.
    friend bool operator==(const ledger_resource& a, const ledger_resource& b)
    {
        return a.ledger_ == b.ledger_ && a.device_ == b.device_ && a.tag_ == b.tag_ &&
               a.upstream_ == b.upstream_;
    }

    /// @brief The upstream's properties.
    template <class P>
    requires has_property<Upstream, P>
    friend void get_property(const ledger_resource&, P) noexcept {}

private:
    Upstream upstream_;
    memory_ledger* ledger_;
    int device_;
    std::optional<memory_tag> tag_;
};

} // namespace gpu
