// Two glibc symbols newer than the glibc this library is linked against (2.28, see
// OldGlibcLink.cmake), defined here so that the link resolves them inside the library.
//
// The host code is compiled by the build machine's g++ against its own glibc headers, and its
// static libstdc++.a was built the same way, so both reference symbols that glibc 2.28 lacks:
//
//   __libc_single_threaded (GLIBC_2.32)  libstdc++'s headers read it to skip atomic operations
//       (shared_ptr/locale/string reference counts) while a process has one thread.  Ours stays
//       0 ("maybe multi-threaded"): libstdc++ then always takes the atomic path, which is what it
//       does on any glibc before 2.32.  Nothing writes it (glibc writes its own copy only).
//   arc4random (GLIBC_2.36)  libstdc++'s std::random_device source "arc4random" (random.o comes
//       in with std::runtime_error's strings).  This library never makes a random_device; if
//       anything did, this definition returns the same thing glibc's does: 32 bits from the
//       kernel's random pool (getentropy, GLIBC_2.25).
//
// Both are hidden (the version script keeps every non-pgk_ symbol local anyway): they bind
// only this library's own references and never interpose on the process's glibc.  Any other
// symbol the link cannot find in glibc 2.28 fails the build (-z defs), it is never left for
// the loader to resolve.

#include <cstdint>
#include <cstdlib>
#include <unistd.h>

extern "C" {

__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;

__attribute__((visibility("hidden"))) std::uint32_t arc4random(void) noexcept {
  std::uint32_t value = 0;
  // getentropy blocks until the kernel's pool is initialised and fails only for > 256 bytes
  // or when the getrandom syscall is missing (Linux < 3.17, below every supported glibc).
  if (getentropy(&value, sizeof value) != 0) {
    std::abort();
  }
  return value;
}

}  // extern "C"
