// Broken on purpose: a shared library that exports something, but not the
// entry point.
extern "C" __attribute__((visibility("default"))) int rtcosim_register_something_else() { return 0; }
