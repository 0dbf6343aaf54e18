// The ABI layout freeze compiled as C++: the header must mean the same thing in both languages.
#include "test/abi/abi_layout_test.c"
