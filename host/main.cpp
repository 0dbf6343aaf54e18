// cloud-controller-manager: main only wires (see host/app).
#include "host/app/app.hpp"

int main(int argc, char** argv) { return ccm::app::run(argc, argv); }
