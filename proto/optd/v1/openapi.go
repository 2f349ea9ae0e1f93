package optdv1

import _ "embed"

// OpenAPI is the OpenAPI (Swagger 2.0) document of the HTTP/JSON gateway,
// generated from optd.proto by protoc-gen-openapiv2 (see the go:generate
// line of doc.go).
//
//go:embed optd.swagger.json
var OpenAPI []byte
