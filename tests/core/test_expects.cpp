// gpu/detail/expects.hpp: GPU_EXPECTS throws the named exception with the joined message, and
// composes nothing while the condition holds.
#include <gpu/detail/expects.hpp>

#include "catch.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>

namespace {

int pieces_made = 0;

std::string counted(const char* text)
{
    ++pieces_made;
    return text;
}

void set_priority(int priority)
{
    GPU_EXPECTS(priority >= -5 && priority <= 0, std::invalid_argument, "gpu::stream: priority ",
                priority, " is outside [", -5, ", ", 0, "]");
}

} // namespace

TEST_CASE("GPU_EXPECTS passes when the condition holds, composing nothing", "[error]")
{
    pieces_made = 0;
    CHECK_NOTHROW(GPU_EXPECTS(1 + 1 == 2, std::invalid_argument, counted("never made")));
    CHECK(pieces_made == 0);
    CHECK_NOTHROW(set_priority(-3));
}

TEST_CASE("GPU_EXPECTS throws the exception it names with the values in the message", "[error]")
{
    CHECK_THROWS_AS(set_priority(3), std::invalid_argument);
    CHECK_THROWS_WITH(set_priority(3), "gpu::stream: priority 3 is outside [-5, 0]");
    const void* handle = nullptr;
    CHECK_THROWS_AS(GPU_EXPECTS(handle != nullptr, std::logic_error, "empty"), std::logic_error);
    pieces_made = 0;
    CHECK_THROWS_WITH(GPU_EXPECTS(false, std::logic_error, counted("made once")), "made once");
    CHECK(pieces_made == 1);
}

TEST_CASE("message pieces: text as it is, characters, numbers in decimal", "[error]")
{
    const std::string text = "text";
    const std::size_t count = 12;
    CHECK(gpu::detail::message_of(text, ' ', count, ", ", -4LL, ", ", 2.5) ==
          "text 12, -4, " + std::to_string(2.5));
    CHECK(gpu::detail::message_of().empty());
}
