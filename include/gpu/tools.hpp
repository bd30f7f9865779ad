/// @file tools.hpp
/// @brief Umbrella header of the tools component (`cudagap::tools`, namespace `gpu::tools`): the
/// environment diagnosis (`gpu::tools::diagnose`), library copies on the loader's path, and VRAM
/// advice and monitoring. The tools sit above the wrappers and may use them; a program that links
/// only `cudagap::core` pulls none of this. Their JSON form is `<gpu/tools/json.hpp>`, present
/// when cudagap was built with nlohmann-json.
#pragma once

#include <gpu/tools/diagnose.hpp>
#include <gpu/tools/library_copies.hpp>
#include <gpu/tools/vram.hpp>
