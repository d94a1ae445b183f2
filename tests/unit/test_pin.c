#include "pb_test.h"
int main(void) { TEST_DONE(); }
