// The pygpukit_driver._driver extension module.
#include <pybind11/pybind11.h>

#include "context.hpp"
#include "errors.hpp"
#include "loader.hpp"

namespace pgk {
void register_memory(pybind11::module_& m);
void register_stream_event(pybind11::module_& m);
void register_module_launch(pybind11::module_& m);
void register_pool_host(pybind11::module_& m);
void register_green_tma(pybind11::module_& m);
void register_block_cache(pybind11::module_& m);
void register_fast_ops(pybind11::module_& m);
}  // namespace pgk

PYBIND11_MODULE(_driver, m) {
    m.doc() = "CUDA driver API binding (loads the driver library on first use; never links it).";
    pgk::register_errors(m);
    pgk::register_loader(m);
    pgk::register_device(m);
    pgk::register_memory(m);
    pgk::register_stream_event(m);
    pgk::register_module_launch(m);
    pgk::register_pool_host(m);
    pgk::register_green_tma(m);
    pgk::register_block_cache(m);
    pgk::register_fast_ops(m);
}
