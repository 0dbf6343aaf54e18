// placeholder, replaced below
#include <doctest/doctest.h>
