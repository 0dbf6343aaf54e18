// nameThisThread: pthread_setname_np where available.
#include "host/runtime/thread_name.hpp"

#include <pthread.h>

#include <string>

namespace ccm::runtime {

void nameThisThread(std::string_view name) {
#if defined(__linux__)
  std::string cut(name.substr(0, 15));  // the kernel's limit, without the terminator
  pthread_setname_np(pthread_self(), cut.c_str());
#else
  (void)name;
#endif
}

}  // namespace ccm::runtime
