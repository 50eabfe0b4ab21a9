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
 *   FAKE_CUDA_LAUNCH_ERROR=<code>   cuLaunchKernel(Ex) fails with <code> (e.g. 719)
 *   FAKE_CUDA_HOSTFUNC_ERROR=<code> cuLaunchHostFunc fails with <code>
 *   FAKE_CUDA_HOST_OOM=1            cuMemHostAlloc fails with OUT_OF_MEMORY
 * Build with -DFAKE_OLD_DRIVER for a CUDA 12.2-era driver: no green contexts, no
 * cuLaunchKernelEx, no cuTensorMapEncodeTiled (not exported at all), version 12020.
 *
 * Host functions run on a new thread; synchronize calls wait for them. Stream capture records
 * kernel launches as graph nodes (not run); launching the instantiated graph replays them.
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
#include <unistd.h>

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
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_LOSSY_QUERY = 934,
};
#ifdef FAKE_OLD_DRIVER
#define DEFAULT_DRIVER_VERSION 12020
#else
#define DEFAULT_DRIVER_VERSION 13000
#endif

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
EXPORT long long fake_outstanding_host = 0;      /* cuMemHostAlloc blocks */
EXPORT long long fake_outstanding_hostreg = 0;   /* cuMemHostRegister ranges */
EXPORT long long fake_outstanding_graphs = 0;
EXPORT long long fake_outstanding_execs = 0;
EXPORT long long fake_outstanding_green = 0;
EXPORT unsigned int fake_last_host_flags = 0;
EXPORT int fake_host_funcs_run = 0;
EXPORT int fake_pending_host_funcs = 0;
EXPORT int fake_last_num_attrs = 0;
EXPORT unsigned int fake_last_cluster[3];
EXPORT int fake_last_cooperative = 0;
EXPORT int fake_last_priority = 0;
EXPORT int fake_last_programmatic = 0;
EXPORT int fake_memcpy2d_calls = 0;
EXPORT int fake_peer_copies = 0;

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
enum { K_ALLOC = 1, K_STREAM, K_EVENT, K_MODULE, K_HOST, K_HOSTREG, K_GRAPH, K_EXEC, K_GREEN };
struct live { void* p; int kind; size_t size; void* owner; int device; int pooled;
              unsigned flags; struct live* next; };
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
                  fake_outstanding_modules + fake_outstanding_host + fake_outstanding_hostreg +
                  fake_outstanding_graphs + fake_outstanding_execs + fake_outstanding_green;
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
    *v = (int)env_ll("FAKE_CUDA_DRIVER_VERSION", DEFAULT_DRIVER_VERSION);
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
        case 8: *v = 48 * 1024; break;          /* MAX_SHARED_MEMORY_PER_BLOCK */
        case 10: *v = 32; break;                /* WARP_SIZE */
        case 13: *v = 1410000 + 570000 * d; break; /* CLOCK_RATE (kHz) */
        case 38: *v = d ? 50 << 20 : 40 << 20; break; /* L2_CACHE_SIZE */
        case 95: *v = 1; break;                 /* COOPERATIVE_LAUNCH */
        case 120: *v = d ? 1 : 0; break;        /* CLUSTER_LAUNCH */
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
struct fake_green { struct fake_ctx ctx; unsigned sms; };
static int valid_ctx(void* c) {
    for (int i = 0; i < NDEV; ++i) if (c == &ctxs[i]) return 1;
    for (struct live* l = live_list; l; l = l->next)
        if (l->kind == K_GREEN && &((struct fake_green*)l->p)->ctx == c) return 1;
    return 0;
}
/* Host functions still queued or running (synchronize waits for them). */
static void wait_host_funcs(void) {
    while (__atomic_load_n(&fake_pending_host_funcs, __ATOMIC_SEQ_CST) > 0) usleep(200);
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
static void pools_sync(void);
EXPORT CUresult cuCtxSynchronize(void) { REQUIRE_CTX(); wait_host_funcs(); pools_sync(); return CUDA_SUCCESS; }
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
static void pool_account(int d, long long delta);
EXPORT CUresult cuMemAllocAsync(CUdeviceptr* p, size_t n, void* s) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    CUresult r = cuMemAlloc_v2(p, n);
    if (r != CUDA_SUCCESS) return r;
    LOCK();
    live_find(K_ALLOC, (void*)(uintptr_t)*p)->pooled = 1;
    pool_account(current->device, (long long)n);
    UNLOCK();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, void* s) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    LOCK();
    struct live* l = live_find(K_ALLOC, (void*)(uintptr_t)p);
    if (l && l->pooled) pool_account(l->device, -(long long)l->size);
    UNLOCK();
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
#define MAX_NODES 64
struct fake_node { void* fn; unsigned grid[3], block[3], shared; int nbytes; unsigned char params[128]; };
struct fake_stream { unsigned flags; int priority; int device; int capturing; int nnodes;
                     struct fake_node nodes[MAX_NODES]; };
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
static int capturing(void* s) {
    if (s == NULL || (uintptr_t)s <= 2) return 0;
    LOCK(); struct live* l = live_find(K_STREAM, s); UNLOCK();
    return l && ((struct fake_stream*)s)->capturing;
}
EXPORT CUresult cuStreamSynchronize(void* s) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    if (capturing(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    wait_host_funcs(); pools_sync();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamGetPriority(void* s, int* p) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    *p = ((uintptr_t)s <= 2) ? 0 : ((struct fake_stream*)s)->priority;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamGetFlags(void* s, unsigned* f) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    *f = ((uintptr_t)s <= 2) ? 0 : ((struct fake_stream*)s)->flags;
    return CUDA_SUCCESS;
}
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
EXPORT CUresult cuEventSynchronize(void* e) { REQUIRE_CTX(); CHECK_EVENT(e); wait_host_funcs(); return CUDA_SUCCESS; }
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
struct fake_function { const char* name; int nparams; int sizes[20]; int regs; int max_dyn_shared; };
static struct fake_function functions[] = {
    {"add_f32", 4, {8, 8, 8, 4}, 32, 0},
    {"record_args", 5, {8, 4, 8, 1, 8}, 16, 0},
    {"noop", 0, {0}, 2, 0},
    /* The parameter lists of pygpukit_kernels' small_ops kernels (SMALL_KERNELS' arg types),
       so pygpukit's fast path can be checked byte for byte against its Python path. */
    {"small_ew_f32", 16, {4, 4, 8, 4, 8, 4, 8, 8, 4, 8, 8, 4, 8, 4, 4, 8}, 32, 0},
    {"small_ew_8", 16, {4, 4, 8, 4, 8, 4, 8, 8, 4, 8, 8, 4, 8, 8, 8, 8}, 32, 0},
    {"small_cast", 6, {8, 4, 8, 4, 8, 8}, 32, 0},
    {"small_reduce", 7, {4, 8, 4, 8, 8, 4, 8}, 32, 0},
    {"small_row_norm", 8, {4, 8, 4, 8, 8, 8, 8, 8}, 32, 0},
    {"small_program", 2, {8, 4}, 32, 0},
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
    long long injected = env_ll("FAKE_CUDA_LAUNCH_ERROR", 0);
    if (injected) return (CUresult)injected;
    if (capturing(stream)) {
        struct fake_stream* st = stream;
        if (st->nnodes >= MAX_NODES) return CUDA_ERROR_INVALID_VALUE;
        struct fake_node* nd = &st->nodes[st->nnodes++];
        nd->fn = f; nd->grid[0] = gx; nd->grid[1] = gy; nd->grid[2] = gz;
        nd->block[0] = bx; nd->block[1] = by; nd->block[2] = bz; nd->shared = shared;
        int off = 0;
        for (int i = 0; i < fn->nparams; ++i) {
            memcpy(nd->params + off, params[i], (size_t)fn->sizes[i]);
            off += fn->sizes[i];
        }
        nd->nbytes = off;
        return CUDA_SUCCESS;
    }
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

/* ---------- memory pools ---------- */
struct fake_pool { int device; uint64_t threshold, used, used_high, reserved, reserved_high; };
static struct fake_pool pools[NDEV] = {{0, 0, 0, 0, 0, 0}, {1, 0, 0, 0, 0, 0}};
static void pool_account(int d, long long delta) {
    struct fake_pool* p = &pools[d];
    p->used = (uint64_t)((long long)p->used + delta);
    if (p->used > p->reserved) p->reserved = p->used;
    if (p->used > p->used_high) p->used_high = p->used;
    if (p->reserved > p->reserved_high) p->reserved_high = p->reserved;
}
static void pools_sync(void) {
    LOCK();
    for (int i = 0; i < NDEV; ++i)
        if (pools[i].reserved > pools[i].threshold)
            pools[i].reserved = pools[i].used > pools[i].threshold ? pools[i].used : pools[i].threshold;
    UNLOCK();
}
EXPORT CUresult cuDeviceGetDefaultMemPool(void** pool, CUdevice d) {
    REQUIRE_INIT(); CHECK_DEV(d);
    *pool = &pools[d];
    return CUDA_SUCCESS;
}
static struct fake_pool* as_pool(void* p) {
    for (int i = 0; i < NDEV; ++i) if (p == &pools[i]) return &pools[i];
    return NULL;
}
EXPORT CUresult cuMemPoolSetAttribute(void* pool, int attr, void* value) {
    REQUIRE_INIT();
    struct fake_pool* p = as_pool(pool);
    if (!p || !value) return CUDA_ERROR_INVALID_VALUE;
    uint64_t v; memcpy(&v, value, 8);
    LOCK();
    CUresult r = CUDA_SUCCESS;
    switch (attr) {
        case 4: p->threshold = v; break;
        case 6: if (v) r = CUDA_ERROR_INVALID_VALUE; else p->reserved_high = p->reserved; break;
        case 8: if (v) r = CUDA_ERROR_INVALID_VALUE; else p->used_high = p->used; break;
        default: r = CUDA_ERROR_INVALID_VALUE;
    }
    UNLOCK();
    return r;
}
EXPORT CUresult cuMemPoolGetAttribute(void* pool, int attr, void* value) {
    REQUIRE_INIT();
    struct fake_pool* p = as_pool(pool);
    if (!p || !value) return CUDA_ERROR_INVALID_VALUE;
    uint64_t v = 0;
    LOCK();
    switch (attr) {
        case 4: v = p->threshold; break;
        case 5: v = p->reserved; break;
        case 6: v = p->reserved_high; break;
        case 7: v = p->used; break;
        case 8: v = p->used_high; break;
        default: UNLOCK(); return CUDA_ERROR_INVALID_VALUE;
    }
    UNLOCK();
    memcpy(value, &v, 8);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemPoolTrimTo(void* pool, size_t keep) {
    REQUIRE_INIT();
    struct fake_pool* p = as_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    if (p->reserved > keep) p->reserved = p->used > keep ? p->used : keep;
    UNLOCK();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* ptr, size_t n, void* pool, void* s) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    struct fake_pool* p = as_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = cuMemAlloc_v2(ptr, n);
    if (r != CUDA_SUCCESS) return r;
    LOCK();
    struct live* l = live_find(K_ALLOC, (void*)(uintptr_t)*ptr);
    l->pooled = 1;
    pool_account(p->device, (long long)n);
    UNLOCK();
    return CUDA_SUCCESS;
}

/* ---------- pinned host memory ---------- */
EXPORT CUresult cuMemHostAlloc(void** pp, size_t n, unsigned int flags) {
    REQUIRE_CTX();
    if (!pp || n == 0 || (flags & ~7u)) return CUDA_ERROR_INVALID_VALUE;
    if (env_ll("FAKE_CUDA_HOST_OOM", 0)) return CUDA_ERROR_OUT_OF_MEMORY;
    void* m = calloc(1, n);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    LOCK();
    live_add(K_HOST, m, n, NULL, current->device);
    live_list->flags = flags;
    fake_outstanding_host++;
    fake_last_host_flags = flags;
    UNLOCK();
    *pp = m;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFreeHost(void* p) {
    REQUIRE_INIT();
    LOCK();
    if (!live_remove(K_HOST, p)) { fake_bad_frees++; UNLOCK(); return CUDA_ERROR_INVALID_VALUE; }
    fake_outstanding_host--;
    UNLOCK();
    free(p);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemHostRegister_v2(void* p, size_t n, unsigned int flags) {
    REQUIRE_CTX();
    if (!p || n == 0 || (flags & ~15u)) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    for (struct live* l = live_list; l; l = l->next) {
        if (l->kind != K_HOSTREG) continue;
        uintptr_t b = (uintptr_t)l->p, x = (uintptr_t)p;
        if (x < b + l->size && b < x + n) { UNLOCK(); return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED; }
    }
    live_add(K_HOSTREG, p, n, NULL, current->device);
    live_list->flags = flags;
    fake_outstanding_hostreg++;
    UNLOCK();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemHostUnregister(void* p) {
    REQUIRE_INIT();
    LOCK();
    if (!live_remove(K_HOSTREG, p)) { fake_bad_frees++; UNLOCK(); return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED; }
    fake_outstanding_hostreg--;
    UNLOCK();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* d, void* p, unsigned int flags) {
    REQUIRE_CTX();
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct live* l = live_find(K_HOST, p);
    if (!l) l = live_find(K_HOSTREG, p);
    int ok = l && (l->flags & 2);
    UNLOCK();
    if (!ok) return CUDA_ERROR_INVALID_VALUE;
    *d = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* ---------- more copies and memset ---------- */
typedef struct {
    size_t srcXInBytes, srcY; int srcMemoryType; const void* srcHost; CUdeviceptr srcDevice;
    void* srcArray; size_t srcPitch;
    size_t dstXInBytes, dstY; int dstMemoryType; void* dstHost; CUdeviceptr dstDevice;
    void* dstArray; size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;
EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* c) {
    REQUIRE_CTX();
    if (!c || c->WidthInBytes > c->srcPitch || c->WidthInBytes > c->dstPitch) return CUDA_ERROR_INVALID_VALUE;
    if ((c->srcMemoryType != 1 && c->srcMemoryType != 2) || (c->dstMemoryType != 1 && c->dstMemoryType != 2))
        return CUDA_ERROR_INVALID_VALUE;
    size_t span_s = (c->srcY + c->Height - 1) * c->srcPitch + c->srcXInBytes + c->WidthInBytes;
    size_t span_d = (c->dstY + c->Height - 1) * c->dstPitch + c->dstXInBytes + c->WidthInBytes;
    if (c->srcMemoryType == 2) CHECK_RANGE(c->srcDevice, span_s);
    if (c->dstMemoryType == 2) CHECK_RANGE(c->dstDevice, span_d);
    const char* src = c->srcMemoryType == 1 ? (const char*)c->srcHost : (const char*)(uintptr_t)c->srcDevice;
    char* dst = c->dstMemoryType == 1 ? (char*)c->dstHost : (char*)(uintptr_t)c->dstDevice;
    for (size_t y = 0; y < c->Height; ++y)
        memmove(dst + (c->dstY + y) * c->dstPitch + c->dstXInBytes,
                src + (c->srcY + y) * c->srcPitch + c->srcXInBytes, c->WidthInBytes);
    LOCK(); fake_memcpy2d_calls++; UNLOCK();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* c, void* s) {
    CHECK_STREAM(s);
    return cuMemcpy2D_v2(c);
}
EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, void* dctx, CUdeviceptr src, void* sctx, size_t n) {
    REQUIRE_CTX();
    if (!valid_ctx(dctx) || !valid_ctx(sctx)) return CUDA_ERROR_INVALID_CONTEXT;
    CHECK_RANGE(dst, n); CHECK_RANGE(src, n);
    memmove((void*)(uintptr_t)dst, (void*)(uintptr_t)src, n);
    LOCK(); fake_peer_copies++; UNLOCK();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, void* dctx, CUdeviceptr src, void* sctx,
                                  size_t n, void* s) {
    CHECK_STREAM(s);
    return cuMemcpyPeer(dst, dctx, src, sctx, n);
}
EXPORT CUresult cuMemsetD16Async(CUdeviceptr p, unsigned short v, size_t n, void* s) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    if (p % 2 != 0) return CUDA_ERROR_INVALID_VALUE;
    CHECK_RANGE(p, n * 2);
    for (size_t i = 0; i < n; ++i) memcpy((char*)(uintptr_t)p + 2 * i, &v, 2);
    return CUDA_SUCCESS;
}

/* ---------- host functions ---------- */
struct host_call { void (*fn)(void*); void* data; };
static void* host_thread(void* arg) {
    struct host_call* c = arg;
    usleep(1000);  /* run "later", like the driver's callback thread */
    c->fn(c->data);
    LOCK(); fake_host_funcs_run++; UNLOCK();
    __atomic_sub_fetch(&fake_pending_host_funcs, 1, __ATOMIC_SEQ_CST);
    free(c);
    return NULL;
}
EXPORT CUresult cuLaunchHostFunc(void* s, void (*fn)(void*), void* data) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    long long injected = env_ll("FAKE_CUDA_HOSTFUNC_ERROR", 0);
    if (injected) return (CUresult)injected;
    if (!fn) return CUDA_ERROR_INVALID_VALUE;
    struct host_call* c = malloc(sizeof *c);
    c->fn = fn; c->data = data;
    __atomic_add_fetch(&fake_pending_host_funcs, 1, __ATOMIC_SEQ_CST);
    pthread_t t;
    if (pthread_create(&t, NULL, host_thread, c) != 0) {
        __atomic_sub_fetch(&fake_pending_host_funcs, 1, __ATOMIC_SEQ_CST);
        free(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_detach(t);
    return CUDA_SUCCESS;
}

/* ---------- stream capture and graphs ---------- */
/* A graph: its nodes (destroyed ones stay in place, dead) and its edges.  Stream capture makes
   a line whose edges are programmatic (type 1), as launches with PDL make them, so a query
   without edge data is lossy there, as in the real driver. */
#define MAX_EDGES 256
struct fake_edge { int from, to; unsigned char type; };
struct fake_graph { int nnodes; struct fake_node nodes[MAX_NODES]; int dead[MAX_NODES];
                    int nedges; struct fake_edge edges[MAX_EDGES]; };
EXPORT CUresult cuStreamBeginCapture_v2(void* s, int mode) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    if ((uintptr_t)s <= 2) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (mode < 0 || mode > 2) return CUDA_ERROR_INVALID_VALUE;
    struct fake_stream* st = s;
    if (st->capturing) return CUDA_ERROR_ILLEGAL_STATE;
    st->capturing = 1; st->nnodes = 0;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamIsCapturing(void* s, int* status) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    *status = capturing(s) ? 1 : 0;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamEndCapture(void* s, void** graph) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    if (!capturing(s)) return CUDA_ERROR_ILLEGAL_STATE;
    struct fake_stream* st = s;
    struct fake_graph* g = calloc(1, sizeof *g);
    g->nnodes = st->nnodes;
    memcpy(g->nodes, st->nodes, sizeof g->nodes);
    for (int i = 1; i < g->nnodes; ++i)
        g->edges[g->nedges++] = (struct fake_edge){i - 1, i, 1};
    st->capturing = 0; st->nnodes = 0;
    LOCK(); live_add(K_GRAPH, g, 0, NULL, current->device); fake_outstanding_graphs++; UNLOCK();
    *graph = g;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphGetNodes(void* g, void** nodes, size_t* n) {
    REQUIRE_INIT();
    LOCK(); int ok = live_find(K_GRAPH, g) != NULL; UNLOCK();
    if (!ok) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_graph* gr = g;
    size_t live = 0;
    for (int i = 0; i < gr->nnodes; ++i) {
        if (gr->dead[i]) continue;
        if (nodes && live < *n) nodes[live] = &gr->nodes[i];
        ++live;
    }
    *n = live;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphInstantiateWithFlags(void** exec, void* g, unsigned long long flags) {
    REQUIRE_CTX();
    LOCK(); int ok = live_find(K_GRAPH, g) != NULL; UNLOCK();
    if (!ok) return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~0xFULL) return CUDA_ERROR_INVALID_VALUE;
    /* The executable runs the live nodes in an order their edges allow (Kahn). */
    struct fake_graph* gr = g;
    struct fake_graph* e = calloc(1, sizeof *e);
    int indeg[MAX_NODES] = {0}, done[MAX_NODES] = {0};
    for (int k = 0; k < gr->nedges; ++k) indeg[gr->edges[k].to]++;
    for (int placed = 1; placed;) {
        placed = 0;
        for (int i = 0; i < gr->nnodes; ++i) {
            if (gr->dead[i] || done[i] || indeg[i] != 0) continue;
            done[i] = placed = 1;
            e->nodes[e->nnodes++] = gr->nodes[i];
            for (int k = 0; k < gr->nedges; ++k)
                if (gr->edges[k].from == i) indeg[gr->edges[k].to]--;
        }
    }
    LOCK(); live_add(K_EXEC, e, 0, NULL, current->device); fake_outstanding_execs++; UNLOCK();
    *exec = e;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphLaunch(void* exec, void* s) {
    REQUIRE_CTX(); CHECK_STREAM(s);
    LOCK(); int ok = live_find(K_EXEC, exec) != NULL; UNLOCK();
    if (!ok) return CUDA_ERROR_INVALID_HANDLE;
    if (capturing(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    struct fake_graph* e = exec;
    for (int i = 0; i < e->nnodes; ++i) {
        struct fake_node* nd = &e->nodes[i];
        struct fake_function* fn = as_function(nd->fn);
        void* params[20];
        int off = 0;
        for (int k = 0; k < fn->nparams; ++k) { params[k] = nd->params + off; off += fn->sizes[k]; }
        CUresult r = cuLaunchKernel(nd->fn, nd->grid[0], nd->grid[1], nd->grid[2], nd->block[0],
                                    nd->block[1], nd->block[2], nd->shared, s, params, NULL);
        if (r != CUDA_SUCCESS) return r;
    }
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphDestroy(void* g) {
    REQUIRE_INIT();
    LOCK();
    if (!live_remove(K_GRAPH, g)) { fake_bad_frees++; UNLOCK(); return CUDA_ERROR_INVALID_HANDLE; }
    fake_outstanding_graphs--;
    UNLOCK();
    free(g);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphExecDestroy(void* e) {
    REQUIRE_INIT();
    LOCK();
    if (!live_remove(K_EXEC, e)) { fake_bad_frees++; UNLOCK(); return CUDA_ERROR_INVALID_HANDLE; }
    fake_outstanding_execs--;
    UNLOCK();
    free(e);
    return CUDA_SUCCESS;
}

/* ---------- graph editing (CUDA 12.3/12.4 entry points) ---------- */
#ifndef FAKE_OLD_DRIVER
static struct fake_graph* graph_of(void* node, int* index) {
    LOCK();
    for (struct live* l = live_list; l; l = l->next) {
        if (l->kind != K_GRAPH) continue;
        struct fake_graph* g = l->p;
        struct fake_node* nd = node;
        if (nd >= g->nodes && nd < g->nodes + g->nnodes && !g->dead[nd - g->nodes]) {
            *index = (int)(nd - g->nodes);
            UNLOCK();
            return g;
        }
    }
    UNLOCK();
    return NULL;
}
EXPORT CUresult cuGraphNodeGetType(void* node, int* type) {
    REQUIRE_INIT();
    int i;
    if (!graph_of(node, &i) || !type) return CUDA_ERROR_INVALID_VALUE;
    *type = 0; /* CU_GRAPH_NODE_TYPE_KERNEL: the fake captures kernels only */
    return CUDA_SUCCESS;
}
typedef struct {
    void* func; unsigned grid[3], block[3], shared; void** kernelParams; void** extra;
    void* kern; void* ctx;
} fake_kernel_node_params;
static void* node_param_ptrs[MAX_NODES][20];
EXPORT CUresult cuGraphKernelNodeGetParams_v2(void* node, fake_kernel_node_params* p) {
    REQUIRE_INIT();
    int i;
    struct fake_graph* g = graph_of(node, &i);
    if (!g || !p) return CUDA_ERROR_INVALID_VALUE;
    struct fake_node* nd = &g->nodes[i];
    struct fake_function* fn = as_function(nd->fn);
    int off = 0;
    for (int k = 0; k < fn->nparams; ++k) { node_param_ptrs[i][k] = nd->params + off; off += fn->sizes[k]; }
    p->func = nd->fn;
    memcpy(p->grid, nd->grid, sizeof p->grid); memcpy(p->block, nd->block, sizeof p->block);
    p->shared = nd->shared; p->kernelParams = node_param_ptrs[i]; p->extra = NULL;
    p->kern = NULL; p->ctx = NULL;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphAddKernelNode_v2(void** node, void* g, void* const* deps, size_t ndeps,
                                        const fake_kernel_node_params* p) {
    REQUIRE_CTX();
    LOCK(); int ok = live_find(K_GRAPH, g) != NULL; UNLOCK();
    if (!ok) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_graph* gr = g;
    struct fake_function* fn = p ? as_function(p->func) : NULL;
    if (!fn || p->extra || (fn->nparams && !p->kernelParams) || gr->nnodes >= MAX_NODES ||
        (ndeps && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    int i = gr->nnodes++;
    struct fake_node* nd = &gr->nodes[i];
    nd->fn = p->func;
    memcpy(nd->grid, p->grid, sizeof nd->grid); memcpy(nd->block, p->block, sizeof nd->block);
    nd->shared = p->shared;
    int off = 0;
    for (int k = 0; k < fn->nparams; ++k) { memcpy(nd->params + off, p->kernelParams[k], (size_t)fn->sizes[k]); off += fn->sizes[k]; }
    nd->nbytes = off;
    for (size_t k = 0; k < ndeps; ++k) {
        int j;
        if (graph_of(deps[k], &j) != gr || gr->nedges >= MAX_EDGES) return CUDA_ERROR_INVALID_VALUE;
        gr->edges[gr->nedges++] = (struct fake_edge){j, i, 0};
    }
    *node = nd;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphDestroyNode(void* node) {
    REQUIRE_INIT();
    int i;
    struct fake_graph* g = graph_of(node, &i);
    if (!g) return CUDA_ERROR_INVALID_VALUE;
    g->dead[i] = 1;
    int kept = 0;
    for (int k = 0; k < g->nedges; ++k)
        if (g->edges[k].from != i && g->edges[k].to != i) g->edges[kept++] = g->edges[k];
    g->nedges = kept;
    return CUDA_SUCCESS;
}
static CUresult node_edges(void* node, void** out, unsigned char* data, size_t* n, int incoming) {
    REQUIRE_INIT();
    int i;
    struct fake_graph* g = graph_of(node, &i);
    if (!g || !n) return CUDA_ERROR_INVALID_VALUE;
    size_t found = 0;
    int lossy = 0;
    for (int k = 0; k < g->nedges; ++k) {
        struct fake_edge* ed = &g->edges[k];
        if ((incoming ? ed->to : ed->from) != i) continue;
        if (out && found < *n) {
            out[found] = &g->nodes[incoming ? ed->from : ed->to];
            if (data) { memset(data + 8 * found, 0, 8); data[8 * found + 2] = ed->type; }
            else if (ed->type) lossy = 1;
        }
        ++found;
    }
    if (out && found > *n) found = *n;
    *n = found;
    return lossy ? CUDA_ERROR_LOSSY_QUERY : CUDA_SUCCESS;
}
EXPORT CUresult cuGraphNodeGetDependencies_v2(void* node, void** deps, unsigned char* data, size_t* n) {
    return node_edges(node, deps, data, n, 1);
}
EXPORT CUresult cuGraphNodeGetDependentNodes_v2(void* node, void** deps, unsigned char* data, size_t* n) {
    return node_edges(node, deps, data, n, 0);
}
EXPORT CUresult cuGraphAddDependencies_v2(void* g, void* const* from, void* const* to,
                                          const unsigned char* data, size_t n) {
    REQUIRE_INIT();
    LOCK(); int ok = live_find(K_GRAPH, g) != NULL; UNLOCK();
    if (!ok) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_graph* gr = g;
    for (size_t k = 0; k < n; ++k) {
        int a, b;
        if (graph_of(from[k], &a) != gr || graph_of(to[k], &b) != gr || gr->nedges >= MAX_EDGES)
            return CUDA_ERROR_INVALID_VALUE;
        gr->edges[gr->nedges++] = (struct fake_edge){a, b, data ? data[8 * k + 2] : 0};
    }
    return CUDA_SUCCESS;
}
/* The fake lays a kernel's parameters out packed (as its capture stores them). */
EXPORT CUresult cuFuncGetParamInfo(void* f, size_t index, size_t* offset, size_t* size) {
    REQUIRE_INIT();
    struct fake_function* fn = as_function(f);
    if (!fn || (int)index >= fn->nparams) return CUDA_ERROR_INVALID_VALUE;
    size_t off = 0;
    for (size_t k = 0; k < index; ++k) off += (size_t)fn->sizes[k];
    if (offset) *offset = off;
    if (size) *size = (size_t)fn->sizes[index];
    return CUDA_SUCCESS;
}
#endif /* FAKE_OLD_DRIVER */

/* ---------- peer access ---------- */
static int peer_enabled[NDEV][NDEV];
EXPORT CUresult cuDeviceCanAccessPeer(int* v, CUdevice d, CUdevice p) {
    REQUIRE_INIT(); CHECK_DEV(d); CHECK_DEV(p);
    *v = d != p;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxEnablePeerAccess(void* peer, unsigned int flags) {
    REQUIRE_CTX();
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    LOCK(); int ok = valid_ctx(peer); UNLOCK();
    if (!ok) return CUDA_ERROR_INVALID_CONTEXT;
    int d = current->device, p = ((struct fake_ctx*)peer)->device;
    if (d == p) return CUDA_ERROR_INVALID_DEVICE;
    if (peer_enabled[d][p]) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    peer_enabled[d][p] = 1;
    return CUDA_SUCCESS;
}

/* ---------- occupancy ---------- */
static int max_active(int bs, size_t smem) {
    if (bs <= 0 || bs > 1024) return -1;
    int n = 2048 / bs;
    if (n > 32) n = 32;
    if (smem > 0) { int m = (int)((228 * 1024) / smem); if (m < n) n = m; }
    return n;
}
EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* n, void* f, int bs, size_t smem) {
    REQUIRE_CTX();
    if (!as_function(f)) return CUDA_ERROR_INVALID_HANDLE;
    int v = max_active(bs, smem);
    if (v < 0) return CUDA_ERROR_INVALID_VALUE;
    *n = v;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int* grid, int* block, void* f, void* cb,
                                                 size_t smem, int limit) {
    REQUIRE_CTX();
    if (!as_function(f)) return CUDA_ERROR_INVALID_HANDLE;
    if (cb != NULL) return CUDA_ERROR_INVALID_VALUE;
    int bs = (limit > 0 && limit < 1024) ? limit : 1024;
    *block = bs;
    *grid = dev_sms[current->device] * max_active(bs, smem);
    return CUDA_SUCCESS;
}

#ifndef FAKE_OLD_DRIVER
/* ---------- cuLaunchKernelEx ---------- */
typedef struct { int id; char pad[4]; union { char raw[64]; struct { unsigned x, y, z; } cluster; int i; } v; } fake_attr;
typedef struct {
    unsigned gx, gy, gz, bx, by, bz, shared; void* stream; fake_attr* attrs; unsigned nattrs;
} fake_launch_config;
EXPORT CUresult cuLaunchKernelEx(const fake_launch_config* c, void* f, void** params, void** extra) {
    REQUIRE_CTX();
    if (!c || (c->nattrs && !c->attrs)) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    fake_last_num_attrs = (int)c->nattrs;
    fake_last_cluster[0] = fake_last_cluster[1] = fake_last_cluster[2] = 0;
    fake_last_cooperative = 0; fake_last_priority = 0; fake_last_programmatic = 0;
    UNLOCK();
    for (unsigned i = 0; i < c->nattrs; ++i) {
        const fake_attr* a = &c->attrs[i];
        switch (a->id) {
            case 2: fake_last_cooperative = a->v.i; break;
            case 4:
                if (dev_cc[current->device][0] < 9) return CUDA_ERROR_NOT_SUPPORTED;
                fake_last_cluster[0] = a->v.cluster.x; fake_last_cluster[1] = a->v.cluster.y;
                fake_last_cluster[2] = a->v.cluster.z;
                if (c->gx % a->v.cluster.x) return CUDA_ERROR_INVALID_VALUE;
                break;
            case 8: fake_last_priority = a->v.i; break;
            case 6:
                if (dev_cc[current->device][0] < 9) return CUDA_ERROR_NOT_SUPPORTED;
                fake_last_programmatic = a->v.i;
                break;
            default: return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return cuLaunchKernel(f, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->shared, c->stream,
                          params, extra);
}

/* ---------- green contexts ---------- */
typedef struct { int type; unsigned char pad[92]; unsigned smCount, minPart, align, flags;
                 unsigned char rest[24]; void* next; } fake_res;
typedef char fake_res_is_144_bytes[sizeof(fake_res) == 144 ? 1 : -1];
struct fake_desc { unsigned sms; };
EXPORT CUresult cuDeviceGetDevResource(CUdevice d, fake_res* r, int type) {
    REQUIRE_INIT(); CHECK_DEV(d);
    if (type != 1 || !r) return CUDA_ERROR_INVALID_VALUE;
    memset(r, 0, sizeof *r);
    r->type = 1; r->smCount = (unsigned)dev_sms[d]; r->minPart = 8; r->align = 8;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDevSmResourceSplitByCount(fake_res* result, unsigned* nb, const fake_res* in,
                                            fake_res* remaining, unsigned flags, unsigned minCount) {
    REQUIRE_INIT();
    if (!nb || !in || in->type != 1 || flags != 0 || minCount == 0) return CUDA_ERROR_INVALID_VALUE;
    unsigned count = (minCount + 7) / 8 * 8;
    unsigned groups = in->smCount / count;
    if (groups > *nb) groups = *nb;
    if (groups == 0) return CUDA_ERROR_INVALID_VALUE;  /* CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION */
    if (result)
        for (unsigned i = 0; i < groups; ++i) {
            memset(&result[i], 0, sizeof result[i]);
            result[i].type = 1; result[i].smCount = count; result[i].minPart = 8; result[i].align = 8;
        }
    if (remaining) {
        memset(remaining, 0, sizeof *remaining);
        remaining->type = 1; remaining->smCount = in->smCount - groups * count;
        remaining->minPart = 8; remaining->align = 8;
    }
    *nb = groups;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDevResourceGenerateDesc(struct fake_desc** desc, fake_res* res, unsigned n) {
    REQUIRE_INIT();
    if (!desc || !res || n == 0) return CUDA_ERROR_INVALID_VALUE;
    static struct fake_desc descs[256];
    static int ndesc = 0;
    LOCK();
    struct fake_desc* d = &descs[ndesc++ % 256];
    d->sms = 0;
    for (unsigned i = 0; i < n; ++i) { if (res[i].type != 1) { UNLOCK(); return CUDA_ERROR_INVALID_VALUE; } d->sms += res[i].smCount; }
    UNLOCK();
    *desc = d;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGreenCtxCreate(struct fake_green** g, struct fake_desc* desc, CUdevice d, unsigned flags) {
    REQUIRE_INIT(); CHECK_DEV(d);
    if (!g || !desc || !(flags & 1)) return CUDA_ERROR_INVALID_VALUE;
    struct fake_green* gr = calloc(1, sizeof *gr);
    gr->ctx.device = d; gr->ctx.refcount = 1; gr->sms = desc->sms;
    LOCK(); live_add(K_GREEN, gr, 0, NULL, d); fake_outstanding_green++; UNLOCK();
    *g = gr;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGreenCtxDestroy(struct fake_green* g) {
    REQUIRE_INIT();
    LOCK();
    if (!live_remove(K_GREEN, g)) { fake_bad_frees++; UNLOCK(); return CUDA_ERROR_INVALID_HANDLE; }
    fake_outstanding_green--;
    UNLOCK();
    if (current == &g->ctx) current = NULL;
    free(g);
    return CUDA_SUCCESS;
}
#define CHECK_GREEN(g) do { LOCK(); int _ok = live_find(K_GREEN, (g)) != NULL; UNLOCK(); \
    if (!_ok) return CUDA_ERROR_INVALID_HANDLE; } while (0)
EXPORT CUresult cuGreenCtxGetDevResource(struct fake_green* g, fake_res* r, int type) {
    REQUIRE_INIT(); CHECK_GREEN(g);
    if (type != 1) return CUDA_ERROR_INVALID_VALUE;
    memset(r, 0, sizeof *r);
    r->type = 1; r->smCount = g->sms; r->minPart = 8; r->align = 8;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxFromGreenCtx(void** ctx, struct fake_green* g) {
    REQUIRE_INIT(); CHECK_GREEN(g);
    *ctx = &g->ctx;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGreenCtxStreamCreate(void** s, struct fake_green* g, unsigned flags, int prio) {
    REQUIRE_INIT(); CHECK_GREEN(g);
    if (flags != 1) return CUDA_ERROR_INVALID_VALUE;
    struct fake_ctx* saved = current;
    current = &g->ctx;
    CUresult r = cuStreamCreateWithPriority(s, flags, prio);
    current = saved;
    return r;
}

/* ---------- tensor maps ---------- */
EXPORT CUresult cuTensorMapEncodeTiled(void* map, int dtype, unsigned rank, void* addr,
                                       const uint64_t* dims, const uint64_t* strides,
                                       const unsigned* box, const unsigned* estr, int interleave,
                                       int swizzle, int l2, int oob) {
    if (!map || dtype < 0 || dtype > 12 || rank < 1 || rank > 5) return CUDA_ERROR_INVALID_VALUE;
    if (((uintptr_t)addr) % 16 != 0 || interleave < 0 || interleave > 2 || swizzle < 0 ||
        swizzle > 3 || l2 < 0 || l2 > 3 || oob < 0 || oob > 1)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < rank; ++i) {
        if (dims[i] == 0 || dims[i] > (1ULL << 32)) return CUDA_ERROR_INVALID_VALUE;
        if (box[i] == 0 || box[i] > 256 || estr[i] == 0 || estr[i] > 8) return CUDA_ERROR_INVALID_VALUE;
        if (i + 1 < rank && (strides[i] % 16 != 0)) return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t words[16] = {0};
    words[0] = (uint64_t)(uintptr_t)addr;
    words[1] = ((uint64_t)rank << 32) | (uint32_t)dtype;
    for (unsigned i = 0; i < rank; ++i) words[2 + i] = dims[i];
    for (unsigned i = 0; i < rank; ++i) words[7 + i] = box[i];
    words[15] = 0x46414b45544d4150ULL; /* "FAKETMAP" */
    memcpy(map, words, 128);
    return CUDA_SUCCESS;
}
#endif /* FAKE_OLD_DRIVER */

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
    S("cuOccupancyMaxActiveBlocksPerMultiprocessor", cuOccupancyMaxActiveBlocksPerMultiprocessor),
    S("cuOccupancyMaxPotentialBlockSize", cuOccupancyMaxPotentialBlockSize),
    S("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool),
    S("cuMemPoolSetAttribute", cuMemPoolSetAttribute), S("cuMemPoolGetAttribute", cuMemPoolGetAttribute),
    S("cuMemPoolTrimTo", cuMemPoolTrimTo), S("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync),
    S("cuMemHostAlloc", cuMemHostAlloc), S("cuMemFreeHost", cuMemFreeHost),
    S("cuMemHostRegister", cuMemHostRegister_v2), S("cuMemHostUnregister", cuMemHostUnregister),
    S("cuMemHostGetDevicePointer", cuMemHostGetDevicePointer_v2),
    S("cuMemcpy2D", cuMemcpy2D_v2), S("cuMemcpy2DAsync", cuMemcpy2DAsync_v2),
    S("cuMemcpyPeer", cuMemcpyPeer), S("cuMemcpyPeerAsync", cuMemcpyPeerAsync),
    S("cuMemsetD16Async", cuMemsetD16Async),
    S("cuStreamGetPriority", cuStreamGetPriority), S("cuStreamGetFlags", cuStreamGetFlags),
    S("cuLaunchHostFunc", cuLaunchHostFunc),
    S("cuStreamBeginCapture", cuStreamBeginCapture_v2), S("cuStreamEndCapture", cuStreamEndCapture),
    S("cuStreamIsCapturing", cuStreamIsCapturing),
    S("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags), S("cuGraphLaunch", cuGraphLaunch),
    S("cuGraphDestroy", cuGraphDestroy), S("cuGraphExecDestroy", cuGraphExecDestroy),
    S("cuGraphGetNodes", cuGraphGetNodes),
    S("cuDeviceCanAccessPeer", cuDeviceCanAccessPeer), S("cuCtxEnablePeerAccess", cuCtxEnablePeerAccess),
#ifndef FAKE_OLD_DRIVER
    S("cuLaunchKernelEx", cuLaunchKernelEx),
    S("cuDeviceGetDevResource", cuDeviceGetDevResource),
    S("cuDevSmResourceSplitByCount", cuDevSmResourceSplitByCount),
    S("cuDevResourceGenerateDesc", cuDevResourceGenerateDesc),
    S("cuGreenCtxCreate", cuGreenCtxCreate), S("cuGreenCtxDestroy", cuGreenCtxDestroy),
    S("cuGreenCtxGetDevResource", cuGreenCtxGetDevResource), S("cuCtxFromGreenCtx", cuCtxFromGreenCtx),
    S("cuGreenCtxStreamCreate", cuGreenCtxStreamCreate),
    S("cuTensorMapEncodeTiled", cuTensorMapEncodeTiled),
    S("cuGraphNodeGetType", cuGraphNodeGetType),
    S("cuGraphKernelNodeGetParams", cuGraphKernelNodeGetParams_v2),
    S("cuGraphAddKernelNode", cuGraphAddKernelNode_v2), S("cuGraphDestroyNode", cuGraphDestroyNode),
    S("cuGraphNodeGetDependencies", cuGraphNodeGetDependencies_v2),
    S("cuGraphNodeGetDependentNodes", cuGraphNodeGetDependentNodes_v2),
    S("cuGraphAddDependencies", cuGraphAddDependencies_v2),
    S("cuFuncGetParamInfo", cuFuncGetParamInfo),
#endif
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
