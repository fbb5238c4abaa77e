#pragma once
// JSON Schema -> GBNF, so that a reply is a JSON document valid against the schema.
//
// Supported: type (string, number, integer, boolean, null, object, array, or a list of them),
// properties / required (properties appear in the schema's order, the optional ones may be left out;
// no other properties), additionalProperties: false, items / minItems / maxItems, minLength /
// maxLength, enum, const, anyOf / oneOf, allOf with one member, $ref to "#", "#/$defs/NAME" or
// "#/definitions/NAME". {} or a bare "object" / "array" accepts any JSON value of that kind.
// Annotations (title, description, default, examples, $schema, $id, $comment) are ignored. Any other
// keyword is a wb::Error naming it and where it is, rather than output that quietly ignores it.
#include <string>

namespace wb {

// schema_json is the schema's text. wb::Error for text that is not JSON, an unsupported keyword, or a
// schema no finite JSON value satisfies (a required property that refers back to its own schema),
// each naming where in the schema.
std::string json_schema_to_gbnf(const std::string& schema_json);

}  // namespace wb
