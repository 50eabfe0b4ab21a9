#include "loader.hpp"

#include <pybind11/stl.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>

#ifdef _WIN32
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#else
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#if defined(__linux__)
#include <link.h>
#endif
#endif

namespace py = pybind11;

namespace pgk {
namespace {

using GetProcAddressV2 = CUresult(const char*, void**, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult*);
using GetProcAddressV1 = CUresult(const char*, void**, int, cuuint64_t);

struct LoaderState {
    void* handle = nullptr;  // HMODULE on Windows
    std::string path;
    std::string load_error;
    std::string resolver;
    std::vector<std::string> fallback_symbols;
    std::vector<std::string> missing_symbols;
    Driver table;

    std::mutex init_mutex;
    std::atomic<int> init_state{0};  // 0: not tried, 1: ok, 2: failed
    CUresult init_result = CUDA_SUCCESS;
    std::string init_error;
};

// Intentionally leaked: destructors of statics must not race interpreter/driver teardown.
LoaderState& raw_state() {
    static LoaderState* s = new LoaderState();
    return *s;
}

void load_into(LoaderState& s);

// The loader state, the driver library loaded on first use (not at import: `import pygpukit`
// maps no CUDA library until an array or a driver call needs it).  call_once: thread-safe,
// and an atomic check once done.
std::once_flag g_loaded;
LoaderState& state() {
    LoaderState& s = raw_state();
    std::call_once(g_loaded, [&s] { load_into(s); });
    return s;
}

#ifdef _WIN32
std::string utf8(const std::wstring& w) {
    if (w.empty()) return {};
    int n = WideCharToMultiByte(CP_UTF8, 0, w.data(), static_cast<int>(w.size()), nullptr, 0,
                                nullptr, nullptr);
    std::string out(static_cast<size_t>(n), '\0');
    WideCharToMultiByte(CP_UTF8, 0, w.data(), static_cast<int>(w.size()), out.data(), n, nullptr,
                        nullptr);
    return out;
}

std::string last_error_message() {
    DWORD code = GetLastError();
    wchar_t* buf = nullptr;
    FormatMessageW(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM |
                       FORMAT_MESSAGE_IGNORE_INSERTS,
                   nullptr, code, 0, reinterpret_cast<LPWSTR>(&buf), 0, nullptr);
    std::string msg = buf ? utf8(buf) : std::string();
    if (buf) LocalFree(buf);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r' || msg.back() == ' '))
        msg.pop_back();
    return "error " + std::to_string(code) + (msg.empty() ? "" : ": " + msg);
}

void* open_library(const std::wstring& name, bool explicit_path, std::string& error) {
    DWORD flags = explicit_path ? LOAD_WITH_ALTERED_SEARCH_PATH : LOAD_LIBRARY_SEARCH_SYSTEM32;
    HMODULE h = LoadLibraryExW(name.c_str(), nullptr, flags);
    if (h == nullptr) error = last_error_message();
    return reinterpret_cast<void*>(h);
}

void* find_symbol(void* handle, const char* name) {
    return reinterpret_cast<void*>(GetProcAddress(reinterpret_cast<HMODULE>(handle), name));
}

std::string path_of(void* handle) {
    std::wstring buf(32768, L'\0');
    DWORD n = GetModuleFileNameW(reinterpret_cast<HMODULE>(handle), buf.data(),
                                 static_cast<DWORD>(buf.size()));
    buf.resize(n);
    return utf8(buf);
}
#else
void* open_library(const std::string& name, std::string& error) {
    void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        const char* e = dlerror();
        error = e ? e : "unknown dlopen error";
    }
    return h;
}

void* find_symbol(void* handle, const char* name) { return dlsym(handle, name); }

std::string absolute(const std::string& p) {
    if (!p.empty() && p[0] == '/') return p;
    char buf[PATH_MAX];
    if (realpath(p.c_str(), buf) != nullptr) return buf;
    return p;
}

std::string path_of(void* handle, void* any_symbol) {
#if defined(__linux__)
    struct link_map* lm = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm != nullptr && lm->l_name != nullptr &&
        lm->l_name[0] != '\0')
        return absolute(lm->l_name);
#else
    (void)handle;
#endif
    Dl_info info;
    if (any_symbol != nullptr && dladdr(any_symbol, &info) != 0 && info.dli_fname != nullptr)
        return absolute(info.dli_fname);
    return {};
}
#endif

// Opens the driver library: the env override if set, else the platform's default names.
void open_driver(LoaderState& s) {
    std::string tried;
#ifdef _WIN32
    const wchar_t* env = _wgetenv(L"PYGPUKIT_CUDA_DRIVER");
    std::vector<std::pair<std::wstring, bool>> candidates;
    if (env != nullptr && env[0] != L'\0')
        candidates.emplace_back(env, true);
    else
        candidates.emplace_back(L"nvcuda.dll", false);
    for (auto& [name, explicit_path] : candidates) {
        std::string err;
        void* h = open_library(name, explicit_path, err);
        if (h != nullptr) {
            s.handle = h;
            s.path = path_of(h);
            return;
        }
        if (!tried.empty()) tried += "; ";
        tried += "'" + utf8(name) + "' (" + err + ")";
    }
    if (env != nullptr && env[0] != L'\0') {
        s.load_error = std::string("could not load the CUDA driver library named by ") +
                       kDriverEnvVar + ": tried " + tried;
    } else {
        s.load_error = "could not load the CUDA driver library (is the NVIDIA driver installed?): "
                       "tried " + tried + " with LOAD_LIBRARY_SEARCH_SYSTEM32";
    }
#else
    const char* env = std::getenv(kDriverEnvVar);
    std::vector<std::string> candidates;
    bool from_env = env != nullptr && env[0] != '\0';
    if (from_env) {
        candidates.emplace_back(env);
    } else {
#if defined(__APPLE__)
        candidates.emplace_back("libcuda.dylib");
#else
        candidates.emplace_back("libcuda.so.1");
        candidates.emplace_back("/usr/lib/wsl/lib/libcuda.so.1");  // WSL2
#endif
    }
    for (const auto& name : candidates) {
        std::string err;
        void* h = open_library(name, err);
        if (h != nullptr) {
            s.handle = h;
            s.path = path_of(h, dlsym(h, "cuInit"));
            if (s.path.empty()) s.path = absolute(name);
            return;
        }
        if (!tried.empty()) tried += "; ";
        tried += "'" + name + "' (" + err + ")";
    }
    if (from_env) {
        s.load_error = std::string("could not load the CUDA driver library named by ") +
                       kDriverEnvVar + ": tried " + tried;
    } else {
        s.load_error = std::string("could not load the CUDA driver library (is the NVIDIA driver "
                                   "installed?): tried ") + tried +
                       "; set " + kDriverEnvVar + " to the library's absolute path to override";
    }
#endif
}

// Fills the function table: cuGetProcAddress_v2, else cuGetProcAddress, else the exported names.
void resolve(LoaderState& s) {
    auto* gpa2 = reinterpret_cast<GetProcAddressV2*>(find_symbol(s.handle, "cuGetProcAddress_v2"));
    auto* gpa1 = gpa2 != nullptr
                     ? nullptr
                     : reinterpret_cast<GetProcAddressV1*>(find_symbol(s.handle, "cuGetProcAddress"));
    s.resolver = gpa2 ? "cuGetProcAddress_v2" : (gpa1 ? "cuGetProcAddress" : "dlsym");

    auto lookup = [&](const char* name, const char* fallback, int version) -> void* {
        void* fn = nullptr;
        if (gpa2 != nullptr) {
            CUdriverProcAddressQueryResult status = 0;
            if (gpa2(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS ||
                status != 0)
                fn = nullptr;
        } else if (gpa1 != nullptr) {
            if (gpa1(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT) != CUDA_SUCCESS) fn = nullptr;
        }
        if (fn == nullptr) {
            fn = find_symbol(s.handle, fallback);
            if (fn != nullptr && (gpa2 != nullptr || gpa1 != nullptr))
                s.fallback_symbols.emplace_back(name);
        }
        if (fn == nullptr) s.missing_symbols.emplace_back(name);
        return fn;
    };

#define PGK_RESOLVE(name, fallback, version, ...) \
    s.table.name = reinterpret_cast<Driver::name##_t*>(lookup(#name, fallback, version));
    PGK_DRIVER_FUNCTIONS(PGK_RESOLVE)
#undef PGK_RESOLVE
}

// Releases the GIL while in scope if this thread holds it.
class GilRelease {
public:
    GilRelease() {
        if (Py_IsInitialized() && PyGILState_Check()) release_.emplace();
    }

private:
    std::optional<py::gil_scoped_release> release_;
};

void load_into(LoaderState& s) {
    open_driver(s);
    if (s.handle == nullptr) return;
    resolve(s);
    if (s.table.cuInit == nullptr) {
        s.load_error = "'" + s.path + "' was loaded but does not export cuInit "
                       "(not a CUDA driver library?)";
        s.table = Driver{};
        s.handle = nullptr;  // keep it mapped; just treat it as unusable
    }
}

}  // namespace

const Driver& driver() { return state().table; }


void load_driver_library() { state(); }

bool library_attempted() {
    // Whether the load ran (without running it): for the test that import loads nothing.
    return raw_state().handle != nullptr || !raw_state().load_error.empty();
}

bool library_loaded() { return state().handle != nullptr; }

std::string library_path() { return library_loaded() ? state().path : std::string(); }

bool try_init() {
    LoaderState& s = state();
    int st = s.init_state.load(std::memory_order_acquire);
    if (st != 0) return st == 1;
    if (s.handle == nullptr) return false;
    GilRelease nogil;
    std::lock_guard<std::mutex> lock(s.init_mutex);
    st = s.init_state.load(std::memory_order_acquire);
    if (st != 0) return st == 1;
    CUresult r = s.table.cuInit(0);
    if (r == CUDA_SUCCESS) {
        s.init_state.store(1, std::memory_order_release);
        return true;
    }
    s.init_result = r;
    s.init_error = "cuInit(0) failed with " + error_name(r) + " (" + std::to_string(r) +
                   "): " + error_string(r) + "; driver library: " + s.path;
    s.init_state.store(2, std::memory_order_release);
    return false;
}

std::string unavailable_reason() {
    LoaderState& s = state();
    if (s.handle == nullptr) return s.load_error;
    if (try_init()) return {};
    return s.init_error;
}

void require_library() {
    LoaderState& s = state();
    if (s.handle == nullptr)
        throw UnavailableError(CUDA_ERROR_NO_DEVICE, "dlopen", s.load_error);
}

void require_init() {
    LoaderState& s = state();
    if (s.init_state.load(std::memory_order_acquire) == 1) return;
    require_library();
    if (!try_init()) throw UnavailableError(s.init_result, "cuInit", s.init_error);
}

void register_loader(py::module_& m) {
    m.def("is_available", [] { return library_loaded() && try_init(); },
          "True if the CUDA driver library was loaded and cuInit succeeded. Never raises.");
    m.def(
        "unavailable_reason",
        []() -> std::optional<std::string> {
            std::string r = unavailable_reason();
            if (r.empty()) return std::nullopt;
            return r;
        },
        "Why the driver is unavailable (what was searched and the error), or None.");
    m.def(
        "library_path",
        []() -> std::optional<std::string> {
            if (!library_loaded()) return std::nullopt;
            return library_path();
        },
        "Absolute path of the loaded driver library, or None.");
    m.def("init", [] { require_init(); },
          "cuInit(0), once per process; idempotent and thread-safe.");
    m.def(
        "driver_version",
        [] {
            require_library();
            int v = 0;
            CU_NOINIT(cuDriverGetVersion)(&v);
            return v;
        },
        "cuDriverGetVersion, e.g. 13000 for CUDA 13.0 (works even when cuInit failed).");
    m.def("_library_attempted", &library_attempted,
          "Diagnostics: whether the driver library was looked for yet (loading is lazy).");
    m.def(
        "_loader_info",
        [] {
            LoaderState& s = state();
            py::dict d;
            d["path"] = library_loaded() ? py::object(py::str(s.path)) : py::object(py::none());
            d["resolver"] = s.resolver;
            d["fallback_symbols"] = s.fallback_symbols;
            d["missing_symbols"] = s.missing_symbols;
            return d;
        },
        "Diagnostics: how driver symbols were resolved.");
}

}  // namespace pgk
