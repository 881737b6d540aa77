// Sanitizer defaults compiled into every executable of a sanitizer build (CMakeLists.txt), so
// a binary behaves the same whoever starts it: ctest, a test that runs agentexec with a
// scrubbed environment, or agentexec running a test program inside the sandbox.
// The sanitizer runtime calls these hooks at start-up; the environment still overrides.

extern "C" {

// LeakSanitizer skips only third-party leaks, never our own.
// RapidJSON's schema compiler (rapidjson/schema.h, Schema::Schema) copies each object schema's
// property names into an array (AddUniqueElement) and moves them into its Property table, whose
// destructor never frees the names: a few bytes per schema keyword compiled (the event schema
// in tests/support, engine/output_schema, engine/review). Not ours to fix.
const char* __lsan_default_suppressions() {
  return "leak:AddUniqueElement\n";
}

// The suppressed leak is not news: no "Suppressions used" table at exit, which would end up in
// the stderr that tests compare word for word.
const char* __lsan_default_options() {
  return "print_suppressions=0";
}

// A sanitizer report names the frames that led to it.
const char* __ubsan_default_options() {
  return "print_stacktrace=1";
}

}  // extern "C"
