module github.com/remat-compile/remat

go 1.26.0

require (
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/yalue/onnxruntime_go v1.27.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/term v0.47.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
