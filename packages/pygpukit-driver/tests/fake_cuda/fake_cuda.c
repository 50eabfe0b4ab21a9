/*
 * A fake CUDA driver (libcuda) for the CPU-tier tests of pygpukit-driver.
 *
 * Build: cc -shared -fPIC -O1 -o libfakecuda.so fake_cuda.c -lpthread
 *        add -DFAKE_NO_GET_PROC_ADDRESS to leave out cuGetProcAddress_v2 (dlsym fallback path).
 *
 * Two devices; device memory is malloc-backed so copies really move bytes. Exported counters
 * (fake_*) are read by the tests through ctypes. Failure injection through the environment:
 *   FAKE_CUDA_INIT_ERROR=<code>     cuInit returns <code> (e.g. 100, CUDA_ERROR_NO_DEVICE)
 *   FAKE_CUDA_OOM_BYTES=<n>         cuMemAlloc of more than n bytes fails with OUT_OF_MEMORY
 *   FAKE_CUDA_DEVICE_COUNT=<n>      0..2 devices (default 2)
 *   FAKE_CUDA_DRIVER_VERSION=<v>    cuDriverGetVersion (default 13000)
 *   FAKE_CUDA_GPA_HIDE=a,b          cuGetProcAddress_v2 reports these symbols as not found
 *   FAKE_CUDA_NOT_READY=1           cuStreamQuery / cuEventQuery return CUDA_ERROR_NOT_READY
 *
 * Modules: an image starting with "FAKECUBIN" or "FAKEPTX" loads (PTX must be NUL-terminated);
 * anything else fails with CUDA_ERROR_INVALID_PTX and a message in the JIT error log buffer.
 * Kernels: add_f32(float* a, float* b, float* out, int n) really adds; record_args(u64, f32,
 * i64, u8, f64) only records its parameter bytes; every launch records grid/block/params.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct { unsigned char bytes[16]; } CUuuid;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
#define LOCK() pthread_mutex_lock(&mu)
#define UNLOCK() pthread_mutex_unlock(&mu)

static long long env_ll(const char* name, long long def) {
    const char* v = getenv(name);
    return (v && *v) ? strtoll(v, NULL, 0) : def;
}

/* ---------- counters read by the tests ---------- */
EXPORT int fake_init_calls = 0;
EXPORT int fake_gpa_calls = 0;          /* cuGetProcAddress_v2 calls */
EXPORT int fake_gpa_bad_version = 0;    /* calls with cudaVersion < 12000 or flags != 0 */
EXPORT long long fake_outstanding_allocs = 0;
EXPORT long long fake_outstanding_streams = 0;
EXPORT long long fake_outstanding_events = 0;
EXPORT long long fake_outstanding_modules = 0;
EXPORT int fake_bad_frees = 0;          /* free/destroy/release of something not live */
EXPORT int fake_launch_count = 0;
EXPORT unsigned int fake_last_grid[3], fake_last_block[3], fake_last_shared;
EXPORT uint64_t fake_last_stream;
EXPORT unsigned char fake_last_params[256];
EXPORT int fake_last_params_len = 0;
EXPORT unsigned int fake_last_stream_flags = 0;
EXPORT int fake_last_stream_priority = 0;
EXPORT int fake_last_jit_options = 0;   /* number of JIT options passed to cuModuleLoadDataEx */

/* ---------- devices and contexts ---------- */
#define NDEV 2
struct fake_ctx { int device; int refcount; };
static struct fake_ctx ctxs[NDEV] = {{0, 0}, {1, 0}};
static __thread struct fake_ctx* current = NULL;
static const char* dev_names[NDEV] = {"Fake GPU 0", "Fake GPU 1"};
static const int dev_cc[NDEV][2] = {{8, 0}, {9, 0}};
static const int dev_sms[NDEV] = {108, 132};
static const size_t dev_total[NDEV] = {16ULL << 30, 80ULL << 30};
static size_t dev_used[NDEV];
static int initialized = 0;

EXPORT int fake_ctx_refcount(int dev) { return (dev >= 0 && dev < NDEV) ? ctxs[dev].refcount : -1; }

static int device_count(void) {
    long long n = env_ll("FAKE_CUDA_DEVICE_COUNT", NDEV);
    return n < 0 ? 0 : (n > NDEV ? NDEV : (int)n);
}

#define REQUIRE_INIT() do { if (!initialized) return CUDA_ERROR_NOT_INITIALIZED; } while (0)
#define REQUIRE_CTX() do { REQUIRE_INIT(); \
    if (current == NULL || current->refcount <= 0) return CUDA_ERROR_INVALID_CONTEXT; } while (0)
#define CHECK_DEV(d) do { if ((d) < 0 || (d) >= device_count()) return CUDA_ERROR_INVALID_DEVICE; } while (0)

/* ---------- live-handle registry ---------- */
enum { K_ALLOC = 1, K_STREAM, K_EVENT, K_MODULE };
struct live { void* p; int kind; size_t size; void* owner; int device; struct live* next; };
static struct live* live_list = NULL;

static struct live* live_find(int kind, const void* p) {
    for (struct live* l = live_list; l; l = l->next)
        if (l->kind == kind && l->p == p) return l;
    return NULL;
}
static void live_add(int kind, void* p, size_t size, void* owner, int device) {
    struct live* l = calloc(1, sizeof *l);
    l->p = p; l->kind = kind; l->size = size; l->owner = owner; l->device = device;
    l->next = live_list; live_list = l;
}
static int live_remove(int kind, const void* p) {
    for (struct live** pl = &live_list; *pl; pl = &(*pl)->next) {
        if ((*pl)->kind == kind && (*pl)->p == p) {
            struct live* l = *pl; *pl = l->next; free(l); return 1;
        }
    }
    return 0;
}
/* The allocation containing [ptr, ptr+n), or NULL. */
static struct live* find_range(CUdeviceptr ptr, size_t n) {
    for (struct live* l = live_list; l; l = l->next) {
        if (l->kind != K_ALLOC) continue;
        uintptr_t b = (uintptr_t)l->p;
        if (ptr >= b && ptr + n <= b + l->size && ptr + n >= ptr) return l;
    }
    return NULL;
}
static int valid_stream(void* s) {
    return s == NULL || (uintptr_t)s == 1 || (uintptr_t)s == 2 || live_find(K_STREAM, s) != NULL;
}

EXPORT long long fake_outstanding(void) {
    LOCK();
    long long n = fake_outstanding_allocs + fake_outstanding_streams + fake_outstanding_events +
                  fake_outstanding_modules;
    for (int i = 0; i < NDEV; ++i) n += ctxs[i].refcount;
    UNLOCK();
    return n;
}

/* ---------- errors ---------- */
struct err { int code; const char* name; const char* desc; };
static const struct err errs[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};
static const struct err* find_err(int code) {
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; ++i)
        if (errs[i].code == code) return &errs[i];
    return NULL;
}
EXPORT CUresult cuGetErrorName(CUresult e, const char** s) {
    const struct err* x = find_err(e);
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    *s = x ? x->name : NULL;
    return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuGetErrorString(CUresult e, const char** s) {
    const struct err* x = find_err(e);
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    *s = x ? x->desc : NULL;
    return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---------- init, version, devices ---------- */
EXPORT CUresult cuInit(unsigned int flags) {
    LOCK();
    fake_init_calls++;
    UNLOCK();
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    long long e = env_ll("FAKE_CUDA_INIT_ERROR", 0);
    if (e != 0) return (CUresult)e;
    if (device_count() == 0) return CUDA_ERROR_NO_DEVICE;
    initialized = 1;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDriverGetVersion(int* v) {
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    *v = (int)env_ll("FAKE_CUDA_DRIVER_VERSION", 13000);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetCount(int* n) { REQUIRE_INIT(); *n = device_count(); return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGet(CUdevice* d, int ordinal) {
    REQUIRE_INIT(); CHECK_DEV(ordinal); *d = ordinal; return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetName(char* buf, int len, CUdevice d) {
    REQUIRE_INIT(); CHECK_DEV(d);
    if (!buf || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(buf, (size_t)len, "%s", dev_names[d]);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetAttribute(int* v, int attr, CUdevice d) {
    REQUIRE_INIT(); CHECK_DEV(d);
    switch (attr) {
        case 1: *v = 1024; break;               /* MAX_THREADS_PER_BLOCK */
        case 10: *v = 32; break;                /* WARP_SIZE */
        case 16: *v = dev_sms[d]; break;        /* MULTIPROCESSOR_COUNT */
        case 75: *v = dev_cc[d][0]; break;
        case 76: *v = dev_cc[d][1]; break;
        case 97: *v = 227 * 1024; break;        /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceTotalMem_v2(size_t* b, CUdevice d) {
    REQUIRE_INIT(); CHECK_DEV(d); *b = dev_total[d]; return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetPCIBusId(char* buf, int len, CUdevice d) {
    REQUIRE_INIT(); CHECK_DEV(d);
    snprintf(buf, (size_t)len, "0000:%02X:00.0", d + 0x41);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* u, CUdevice d) {
    REQUIRE_INIT(); CHECK_DEV(d);
    for (int i = 0; i < 16; ++i) u->bytes[i] = (unsigned char)(i * 16 + d);
    return CUDA_SUCCESS;
}

/* ---------- contexts ---------- */
EXPORT CUresult cuDevicePrimaryCtxRetain(void** ctx, CUdevice d) {
    REQUIRE_INIT(); CHECK_DEV(d);
    LOCK(); ctxs[d].refcount++; UNLOCK();
    *ctx = &ctxs[d];
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    REQUIRE_INIT(); CHECK_DEV(d);
    LOCK();
    if (ctxs[d].refcount <= 0) { fake_bad_frees++; UNLOCK(); return CUDA_ERROR_INVALID_CONTEXT; }
    ctxs[d].refcount--;
    UNLOCK();
    return CUDA_SUCCESS;
}
static int valid_ctx(void* c) {
    for (int i = 0; i < NDEV; ++i) if (c == &ctxs[i]) return 1;
    return 0;
}
EXPORT CUresult cuCtxSetCurrent(void* c) {
    REQUIRE_INIT();
    if (c != NULL && (!valid_ctx(c) || ((struct fake_ctx*)c)->refcount <= 0))
        return CUDA_ERROR_INVALID_CONTEXT;
    current = c;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxGetCurrent(void** c) { REQUIRE_INIT(); *c = current; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxGetDevice(CUdevice* d) { REQUIRE_CTX(); *d = current->device; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxSynchronize(void) { REQUIRE_CTX(); return CUDA_SUCCESS; }
EXPORT CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
    REQUIRE_CTX();
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return CUDA_SUCCESS;
}

/* ---------- memory ---------- */
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
    REQUIRE_CTX();
    if (!p || n == 0) return CUDA_ERROR_INVALID_VALUE;
    long long limit = env_ll("FAKE_CUDA_OOM_BYTES", -1);
    int d = current->device;
    if ((limit >= 0 && n > (size_t)limit) || n > dev_total[d] - dev_used[d])
        return CUDA_ERROR_OUT_OF_MEMORY;
    void* m = malloc(n);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    LOCK();
    live_add(K_ALLOC, m, n, NULL, d);
    dev_used[d] += n;
    fake_outstanding_allocs++;
    UNLOCK();
    *p = (CUdeviceptr)(uintptr_t)m;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
    REQUIRE_INIT();
    LOCK();
    struct live* l = live_find(K_ALLOC, (void*)(uintptr_t)p);
    if (!l || l->owner != NULL) { fake_bad_frees++; UNLOCK(); return CUDA_ERROR_INVALID_VALUE; }
    dev_used[l->device] -= l->size;
    live_remove(K_ALLOC, (void*)(uintptr_t)p);
    fake_outstanding_allocs--;
    UNLOCK();
    free((void*)(uintptr_t)p);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemGetInfo_v2(size_t* free_b, size_t* total) {
    REQUIRE_CTX();
    *free_b = dev_total[current->device] - dev_used[current->device];
    *total = dev_total[current->device];
    return CUDA_SUCCESS;
}
#define CHECK_RANGE(ptr, n) do { LOCK(); struct live* _l = find_range((ptr), (n)); UNLOCK(); \
    if (!_l) return CUDA_ERROR_INVALID_VALUE; } while (0)
#define CHECK_STREAM(s) do { LOCK(); int _ok = valid_stream(s); UNLOCK(); \
    if (!_ok) return CUDA_ERROR_INVALID_HANDLE; } while (0)
/* The fake runs every stream synchronously, so stream-ordered allocation is plain allocation. */
EXPORT CUresult cuMemAllocAsync(CUdeviceptr* p, size_t n, void* s) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    return cuMemAlloc_v2(p, n);
}
EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, void* s) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    return cuMemFree_v2(p);
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
    REQUIRE_CTX(); CHECK_RANGE(dst, n);
    memcpy((void*)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
    REQUIRE_CTX(); CHECK_RANGE(src, n);
    memcpy(dst, (void*)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    REQUIRE_CTX(); CHECK_RANGE(dst, n); CHECK_RANGE(src, n);
    memmove((void*)(uintptr_t)dst, (void*)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, void* s) {
    CHECK_STREAM(s);
    return cuMemcpyHtoD_v2(dst, src, n);
}
EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, void* s) {
    CHECK_STREAM(s);
    return cuMemcpyDtoH_v2(dst, src, n);
}
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void* s) {
    CHECK_STREAM(s);
    return cuMemcpyDtoD_v2(dst, src, n);
}
EXPORT CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, void* s) {
    REQUIRE_CTX(); CHECK_STREAM(s); CHECK_RANGE(p, n);
    memset((void*)(uintptr_t)p, v, n);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemsetD32Async(CUdeviceptr p, unsigned int v, size_t n, void* s) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    if (p % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
    CHECK_RANGE(p, n * 4);
    for (size_t i = 0; i < n; ++i) memcpy((char*)(uintptr_t)p + 4 * i, &v, 4);
    return CUDA_SUCCESS;
}

/* ---------- streams and events ---------- */
struct fake_stream { unsigned flags; int priority; int device; };
EXPORT CUresult cuStreamCreateWithPriority(void** s, unsigned int flags, int prio) {
    REQUIRE_CTX();
    if (flags & ~1u) return CUDA_ERROR_INVALID_VALUE;
    struct fake_stream* st = calloc(1, sizeof *st);
    st->flags = flags;
    st->priority = prio < -5 ? -5 : (prio > 0 ? 0 : prio);
    st->device = current->device;
    LOCK();
    live_add(K_STREAM, st, 0, NULL, st->device);
    fake_outstanding_streams++;
    fake_last_stream_flags = flags;
    fake_last_stream_priority = st->priority;
    UNLOCK();
    *s = st;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamDestroy_v2(void* s) {
    REQUIRE_INIT();
    LOCK();
    if (!live_remove(K_STREAM, s)) { fake_bad_frees++; UNLOCK(); return CUDA_ERROR_INVALID_HANDLE; }
    fake_outstanding_streams--;
    UNLOCK();
    free(s);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamSynchronize(void* s) { REQUIRE_CTX(); CHECK_STREAM(s); return CUDA_SUCCESS; }
EXPORT CUresult cuStreamQuery(void* s) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    return env_ll("FAKE_CUDA_NOT_READY", 0) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

struct fake_event { unsigned flags; int recorded; double t; };
static double fake_clock = 0.0;
EXPORT CUresult cuEventCreate(void** e, unsigned int flags) {
    REQUIRE_CTX();
    struct fake_event* ev = calloc(1, sizeof *ev);
    ev->flags = flags;
    LOCK();
    live_add(K_EVENT, ev, 0, NULL, current->device);
    fake_outstanding_events++;
    UNLOCK();
    *e = ev;
    return CUDA_SUCCESS;
}
#define CHECK_EVENT(e) do { LOCK(); int _ok = live_find(K_EVENT, (e)) != NULL; UNLOCK(); \
    if (!_ok) return CUDA_ERROR_INVALID_HANDLE; } while (0)
EXPORT CUresult cuEventDestroy_v2(void* e) {
    REQUIRE_INIT();
    LOCK();
    if (!live_remove(K_EVENT, e)) { fake_bad_frees++; UNLOCK(); return CUDA_ERROR_INVALID_HANDLE; }
    fake_outstanding_events--;
    UNLOCK();
    free(e);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuEventRecord(void* e, void* s) {
    REQUIRE_CTX(); CHECK_EVENT(e); CHECK_STREAM(s);
    struct fake_event* ev = e;
    LOCK();
    fake_clock += 1.5;
    ev->recorded = 1;
    ev->t = fake_clock;
    UNLOCK();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuEventSynchronize(void* e) { REQUIRE_CTX(); CHECK_EVENT(e); return CUDA_SUCCESS; }
EXPORT CUresult cuEventQuery(void* e) {
    REQUIRE_CTX(); CHECK_EVENT(e);
    return env_ll("FAKE_CUDA_NOT_READY", 0) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
EXPORT CUresult cuEventElapsedTime(float* ms, void* a, void* b) {
    REQUIRE_CTX(); CHECK_EVENT(a); CHECK_EVENT(b);
    struct fake_event *x = a, *y = b;
    if ((x->flags & 2) || (y->flags & 2) || !x->recorded || !y->recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    *ms = (float)(y->t - x->t);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamWaitEvent(void* s, void* e, unsigned int flags) {
    REQUIRE_CTX(); CHECK_STREAM(s); CHECK_EVENT(e);
    return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---------- modules, functions, launch ---------- */
struct fake_function { const char* name; int nparams; int sizes[8]; int regs; int max_dyn_shared; };
static struct fake_function functions[] = {
    {"add_f32", 4, {8, 8, 8, 4}, 32, 0},
    {"record_args", 5, {8, 4, 8, 1, 8}, 16, 0},
    {"noop", 0, {0}, 2, 0},
};
#define NFUNC (int)(sizeof functions / sizeof functions[0])
struct fake_module { int device; void* global; };

static void write_log(char* buf, size_t cap, const char* msg) {
    if (buf && cap > 0) snprintf(buf, cap, "%s", msg);
}

EXPORT CUresult cuModuleLoadDataEx(void** m, const void* image, unsigned int n, int* opts,
                                   void** vals) {
    REQUIRE_CTX();
    char *info = NULL, *err = NULL;
    size_t info_cap = 0, err_cap = 0;
    int info_size_idx = -1, err_size_idx = -1;
    fake_last_jit_options = (int)n;
    for (unsigned int i = 0; i < n; ++i) {
        switch (opts[i]) {
            case 3: info = vals[i]; break;
            case 4: info_cap = (size_t)(uintptr_t)vals[i]; info_size_idx = (int)i; break;
            case 5: err = vals[i]; break;
            case 6: err_cap = (size_t)(uintptr_t)vals[i]; err_size_idx = (int)i; break;
            default: break;
        }
    }
    const char* img = image;
    int ok = 0;
    if (img && strncmp(img, "FAKECUBIN", 9) == 0) ok = 1;
    if (img && strncmp(img, "FAKEPTX", 7) == 0) ok = memchr(img, 0, 1 << 20) != NULL;
    if (!ok) {
        write_log(err, err_cap, "ptxas fatal   : Unresolved extern function 'fake_missing_fn'\n"
                                "fake-ptxas: image does not start with FAKECUBIN/FAKEPTX");
        if (err_size_idx >= 0) vals[err_size_idx] = (void*)(uintptr_t)(err ? strlen(err) : 0);
        return CUDA_ERROR_INVALID_PTX;
    }
    write_log(info, info_cap, "fake JIT: compiled 3 functions");
    if (info_size_idx >= 0) vals[info_size_idx] = (void*)(uintptr_t)(info ? strlen(info) : 0);
    struct fake_module* mod = calloc(1, sizeof *mod);
    mod->device = current->device;
    mod->global = malloc(8);
    uint64_t init = 0x1122334455667788ULL;
    memcpy(mod->global, &init, 8);
    LOCK();
    live_add(K_MODULE, mod, 0, NULL, mod->device);
    live_add(K_ALLOC, mod->global, 8, mod, mod->device);
    fake_outstanding_modules++;
    UNLOCK();
    *m = mod;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuModuleUnload(void* m) {
    REQUIRE_INIT();
    LOCK();
    if (!live_remove(K_MODULE, m)) { fake_bad_frees++; UNLOCK(); return CUDA_ERROR_INVALID_HANDLE; }
    struct fake_module* mod = m;
    live_remove(K_ALLOC, mod->global);
    fake_outstanding_modules--;
    UNLOCK();
    free(mod->global);
    free(mod);
    return CUDA_SUCCESS;
}
#define CHECK_MODULE(m) do { LOCK(); int _ok = live_find(K_MODULE, (m)) != NULL; UNLOCK(); \
    if (!_ok) return CUDA_ERROR_INVALID_HANDLE; } while (0)
EXPORT CUresult cuModuleGetFunction(void** f, void* m, const char* name) {
    REQUIRE_INIT(); CHECK_MODULE(m);
    for (int i = 0; i < NFUNC; ++i)
        if (strcmp(functions[i].name, name) == 0) { *f = &functions[i]; return CUDA_SUCCESS; }
    return CUDA_ERROR_NOT_FOUND;
}
EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr* p, size_t* size, void* m, const char* name) {
    REQUIRE_INIT(); CHECK_MODULE(m);
    if (strcmp(name, "fake_global") != 0) return CUDA_ERROR_NOT_FOUND;
    struct fake_module* mod = m;
    if (p) *p = (CUdeviceptr)(uintptr_t)mod->global;
    if (size) *size = 8;
    return CUDA_SUCCESS;
}
static struct fake_function* as_function(void* f) {
    for (int i = 0; i < NFUNC; ++i) if (f == &functions[i]) return &functions[i];
    return NULL;
}
EXPORT CUresult cuFuncGetAttribute(int* v, int attr, void* f) {
    REQUIRE_INIT();
    struct fake_function* fn = as_function(f);
    if (!fn) return CUDA_ERROR_INVALID_HANDLE;
    switch (attr) {
        case 0: *v = 1024; break;
        case 4: *v = fn->regs; break;
        case 8: *v = fn->max_dyn_shared; break;
        default: *v = 0; break;
    }
    return CUDA_SUCCESS;
}
EXPORT CUresult cuFuncSetAttribute(void* f, int attr, int value) {
    REQUIRE_INIT();
    struct fake_function* fn = as_function(f);
    if (!fn) return CUDA_ERROR_INVALID_HANDLE;
    if (attr != 8 || value < 0) return CUDA_ERROR_INVALID_VALUE;
    fn->max_dyn_shared = value;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shared, void* stream,
                               void** params, void** extra) {
    REQUIRE_CTX(); CHECK_STREAM(stream);
    struct fake_function* fn = as_function(f);
    if (!fn) return CUDA_ERROR_INVALID_HANDLE;
    if (extra != NULL) return CUDA_ERROR_INVALID_VALUE;
    if (!gx || !gy || !gz || !bx || !by || !bz) return CUDA_ERROR_INVALID_VALUE;
    if ((unsigned long long)bx * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
    if (fn->nparams > 0 && params == NULL) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    fake_launch_count++;
    fake_last_grid[0] = gx; fake_last_grid[1] = gy; fake_last_grid[2] = gz;
    fake_last_block[0] = bx; fake_last_block[1] = by; fake_last_block[2] = bz;
    fake_last_shared = shared;
    fake_last_stream = (uint64_t)(uintptr_t)stream;
    int off = 0;
    for (int i = 0; i < fn->nparams; ++i) {
        memcpy(fake_last_params + off, params[i], (size_t)fn->sizes[i]);
        off += fn->sizes[i];
    }
    fake_last_params_len = off;
    UNLOCK();
    if (strcmp(fn->name, "add_f32") == 0) {
        CUdeviceptr a, b, out;
        int n;
        memcpy(&a, params[0], 8); memcpy(&b, params[1], 8); memcpy(&out, params[2], 8);
        memcpy(&n, params[3], 4);
        if (n < 0) return CUDA_ERROR_INVALID_VALUE;
        size_t bytes = (size_t)n * 4;
        LOCK();
        int ok = find_range(a, bytes) && find_range(b, bytes) && find_range(out, bytes);
        UNLOCK();
        if (!ok) return CUDA_ERROR_ILLEGAL_ADDRESS;
        for (int i = 0; i < n; ++i)
            ((float*)(uintptr_t)out)[i] = ((float*)(uintptr_t)a)[i] + ((float*)(uintptr_t)b)[i];
    }
    return CUDA_SUCCESS;
}

/* ---------- cuGetProcAddress_v2 ---------- */
#ifndef FAKE_NO_GET_PROC_ADDRESS
struct sym { const char* name; void* fn; };
static const struct sym syms[] = {
#define S(name, fn) {name, (void*)fn}
    S("cuGetErrorName", cuGetErrorName), S("cuGetErrorString", cuGetErrorString),
    S("cuInit", cuInit), S("cuDriverGetVersion", cuDriverGetVersion),
    S("cuDeviceGetCount", cuDeviceGetCount), S("cuDeviceGet", cuDeviceGet),
    S("cuDeviceGetName", cuDeviceGetName), S("cuDeviceGetAttribute", cuDeviceGetAttribute),
    S("cuDeviceTotalMem", cuDeviceTotalMem_v2), S("cuDeviceGetPCIBusId", cuDeviceGetPCIBusId),
    S("cuDeviceGetUuid", cuDeviceGetUuid_v2),
    S("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
    S("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2),
    S("cuCtxSetCurrent", cuCtxSetCurrent), S("cuCtxGetCurrent", cuCtxGetCurrent),
    S("cuCtxGetDevice", cuCtxGetDevice), S("cuCtxSynchronize", cuCtxSynchronize),
    S("cuCtxGetStreamPriorityRange", cuCtxGetStreamPriorityRange),
    S("cuMemAlloc", cuMemAlloc_v2), S("cuMemFree", cuMemFree_v2),
    S("cuMemAllocAsync", cuMemAllocAsync), S("cuMemFreeAsync", cuMemFreeAsync),
    S("cuMemGetInfo", cuMemGetInfo_v2), S("cuMemcpyHtoD", cuMemcpyHtoD_v2),
    S("cuMemcpyDtoH", cuMemcpyDtoH_v2), S("cuMemcpyDtoD", cuMemcpyDtoD_v2),
    S("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync_v2), S("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync_v2),
    S("cuMemcpyDtoDAsync", cuMemcpyDtoDAsync_v2), S("cuMemsetD8Async", cuMemsetD8Async),
    S("cuMemsetD32Async", cuMemsetD32Async),
    S("cuStreamCreateWithPriority", cuStreamCreateWithPriority),
    S("cuStreamDestroy", cuStreamDestroy_v2), S("cuStreamSynchronize", cuStreamSynchronize),
    S("cuStreamQuery", cuStreamQuery), S("cuStreamWaitEvent", cuStreamWaitEvent),
    S("cuEventCreate", cuEventCreate), S("cuEventDestroy", cuEventDestroy_v2),
    S("cuEventRecord", cuEventRecord), S("cuEventSynchronize", cuEventSynchronize),
    S("cuEventQuery", cuEventQuery), S("cuEventElapsedTime", cuEventElapsedTime),
    S("cuModuleLoadDataEx", cuModuleLoadDataEx), S("cuModuleUnload", cuModuleUnload),
    S("cuModuleGetFunction", cuModuleGetFunction), S("cuModuleGetGlobal", cuModuleGetGlobal_v2),
    S("cuFuncGetAttribute", cuFuncGetAttribute), S("cuFuncSetAttribute", cuFuncSetAttribute),
    S("cuLaunchKernel", cuLaunchKernel),
#undef S
};

static int hidden(const char* name) {
    const char* h = getenv("FAKE_CUDA_GPA_HIDE");
    if (!h) return 0;
    size_t n = strlen(name);
    for (const char* p = h; *p;) {
        const char* comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        if (!comma) break;
        p = comma + 1;
    }
    return 0;
}

EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                                    uint64_t flags, int* status) {
    LOCK();
    fake_gpa_calls++;
    if (cuda_version < 12000 || flags != 0) fake_gpa_bad_version++;
    UNLOCK();
    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (!hidden(symbol)) {
        for (size_t i = 0; i < sizeof syms / sizeof syms[0]; ++i) {
            if (strcmp(syms[i].name, symbol) == 0) {
                *pfn = syms[i].fn;
                if (status) *status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
                return CUDA_SUCCESS;
            }
        }
    }
    if (status) *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    return CUDA_ERROR_NOT_FOUND;
}
#endif
