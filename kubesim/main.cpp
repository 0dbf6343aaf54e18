// kubesim: the Kubernetes API server simulator of the ccm project (tests and demos only).
// Wiring only: parse flags, start the server, wait for SIGINT/SIGTERM, stop (saving state).
#include <signal.h>

#include <cstdio>
#include <iostream>

#include "host/log/log.hpp"
#include "kubesim/kubesim_server.hpp"
#include "kubesim/options.hpp"

int main(int argc, char** argv) {
  using namespace ccm::kubesim;
  auto cl = parseCommandLine(argc, argv);
  if (!cl.ok()) {
    std::cerr << "kubesim: " << cl.status().message() << "\n";
    return 2;
  }
  if (cl.value().help) {
    std::cout << usage();
    return 0;
  }
  ccm::log::configure(cl.value().log);

  // Block the signals in every thread; the main thread waits for them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  KubesimServer server(cl.value().server);
  auto started = server.start();
  if (!started.ok()) {
    ccm::log::error("kubesim failed to start", {{"error", started.toString()}});
    server.stop();
    return 1;
  }
  int sig = 0;
  sigwait(&signals, &sig);
  ccm::log::info("shutting down", {{"signal", sig}});
  server.stop();
  return 0;
}
