// placeholder, replaced by the C++ SDK helper
#pragma once
#include "ccm/provider_abi.h"
