// An environment variable set for the scope of a test, and restored (or unset) after it.
// Header-only, test code only.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace gpu::test {

/// Sets @p name to @p value until the end of the scope, then puts back what was there before.
struct scoped_env {
    std::string name;
    std::optional<std::string> saved;

    scoped_env(std::string key, const std::string& value) : name(std::move(key))
    {
        if (const char* old = std::getenv(name.c_str()); old != nullptr) {
            saved = old;
        }
        ::setenv(name.c_str(), value.c_str(), 1);
    }
    ~scoped_env()
    {
        if (saved) {
            ::setenv(name.c_str(), saved->c_str(), 1);
        } else {
            ::unsetenv(name.c_str());
        }
    }
    scoped_env(const scoped_env&) = delete;
    scoped_env& operator=(const scoped_env&) = delete;
    scoped_env(scoped_env&&) = delete;
    scoped_env& operator=(scoped_env&&) = delete;
};

} // namespace gpu::test
