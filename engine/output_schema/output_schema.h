// --output-schema: the start-up check (a JSON Schema the service's strict structured output
// accepts) and the end check (the final answer parses and validates). Both wires get the same
// guarantee because the engine checks the answer itself instead of trusting the provider.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

namespace ae {

// Checks `schema_json` against the strict structured-output rules: a JSON object whose root
// is `type: "object"`; every object schema has `additionalProperties: false` and lists every
// property in `required`; only the supported keywords (kStrictKeywords in the .cc, listed in
// README.md) with well-formed values; `$ref`s are local and resolve. The error names the JSON
// pointer (URI fragment form, "#" is the root) and the rule, e.g.
//   #/properties/age/type: unknown type "int" (expected one of: string, number, integer,
//   boolean, object, array, null)
Status CheckStrictOutputSchema(std::string_view schema_json);

// Validates final answers against a schema that passed CheckStrictOutputSchema.
class OutputSchemaValidator {
 public:
  static Result<std::unique_ptr<OutputSchemaValidator>> Make(std::string_view schema_json);
  ~OutputSchemaValidator();
  // OK, or why `answer` is not JSON or does not validate, e.g.
  //   the final answer does not match --output-schema: #/age: "type" failed (schema
  //   #/properties/age)
  Status Validate(std::string_view answer) const;

 private:
  OutputSchemaValidator();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ae
