// Package optdv1 is the versioned gRPC API optd.v1 (docs/formats.md#grpc): the
// .proto in this directory and the Go generated from it, checked in.
//
// Regenerate with scripts/generate.sh (go generate ./...). It needs protoc
// (Debian protobuf-compiler 3.21); protoc-gen-go, protoc-gen-go-grpc,
// protoc-gen-grpc-gateway and protoc-gen-openapiv2 are the versions pinned
// as tools in go.mod, run through `go tool -n`, so the output is the same
// on every machine with the same protoc. The gateway (optd.pb.gw.go) maps
// every method to POST /optd.v1.SERVICE/METHOD with the request as its JSON
// body; optd.swagger.json is its OpenAPI document, embedded as [OpenAPI].
package optdv1

//go:generate sh -c "protoc --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --plugin=protoc-gen-go-grpc=$(go tool -n protoc-gen-go-grpc) --plugin=protoc-gen-grpc-gateway=$(go tool -n protoc-gen-grpc-gateway) --plugin=protoc-gen-openapiv2=$(go tool -n protoc-gen-openapiv2) --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative --grpc-gateway_out=. --grpc-gateway_opt=paths=source_relative,generate_unbound_methods=true --openapiv2_out=. --openapiv2_opt=generate_unbound_methods=true,output_format=json,json_names_for_fields=false optd.proto"
