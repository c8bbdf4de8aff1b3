// Command cel evaluates ValidatingAdmissionPolicy CEL with Kubernetes' own admission-policy code
// (k8s.io/apiserver/pkg/admission/plugin/policy/validating and its CEL libraries, at the versions of
// tools/cel/modules/<library>/go.mod), in the two
// ways this project's rules meet it:
//
//   - vap: a ValidatingAdmissionPolicy with its bindings, parameter objects and namespaces, judged by the API
//     server's own dispatcher (matchConstraints, binding match, paramRef, validationActions, the message and
//     status a client receives);
//   - gatekeeper: a ConstraintTemplate's K8sNativeValidation source with a Constraint, judged the way
//     Gatekeeper's K8sNativeValidation driver judges it (variables anyObject and params first, the Constraint as
//     params, DELETE without object, one violation per denied validation).
//
// `cel eval` reads {"policies": [...], "cases": [...]} as JSON on stdin and prints one result per case; `cel check`
// compiles every expression the way the API server validates a new policy at a given compatibility version.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	"k8s.io/apiserver/pkg/cel/environment"
)

const usage = `usage: cel eval [--stream] < input.json
       cel check [--compatibility-version 1.30] [--environment vap|gatekeeper] < input.json
       cel version`

func main() {
	if len(os.Args) < 2 {
		fail(2, usage)
	}
	switch os.Args[1] {
	case "eval":
		switch {
		case len(os.Args) == 2:
			input := readInput(os.Stdin)
			writeJSON(evaluate(newRegistry(), input))
		case len(os.Args) == 3 && os.Args[2] == "--stream":
			stream(os.Stdin)
		default:
			fail(2, usage)
		}
	case "check":
		compat := "1.30"
		gatekeeperDriver := false
		args := os.Args[2:]
		for len(args) > 0 {
			switch {
			case args[0] == "--compatibility-version" && len(args) > 1:
				compat, args = args[1], args[2:]
			case args[0] == "--environment" && len(args) > 1 && (args[1] == "vap" || args[1] == "gatekeeper"):
				gatekeeperDriver, args = args[1] == "gatekeeper", args[2:]
			default:
				fail(2, "unknown argument "+args[0]+"\n"+usage)
			}
		}
		input := readInput(os.Stdin)
		writeJSON(check(input, compat, gatekeeperDriver))
	case "version":
		// The versions linked in, from the binary's own build information (not from the build's arguments).
		modules := map[string]string{}
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, m := range info.Deps {
				modules[m.Path] = m.Version
			}
		}
		fmt.Println("Kubernetes admission-policy code: k8s.io/apiserver " + modules["k8s.io/apiserver"])
		fmt.Println("CEL: github.com/google/cel-go " + modules["github.com/google/cel-go"])
		fmt.Println("Library: " + library)
		fmt.Println("Default compatibility version: " + environment.DefaultCompatibilityVersion().String())
		fmt.Println("Go Version: " + runtime.Version())
	case "-h", "--help", "help":
		fmt.Println(usage)
	default:
		fail(2, "unknown command "+os.Args[1]+"\n"+usage)
	}
}

// stream answers one input document per line with one output line, until stdin ends; the policies of every line
// stay compiled for the lines after it (a later policy of the same name replaces it).
func stream(r io.Reader) {
	reader := bufio.NewReaderSize(r, 1<<20)
	registry := newRegistry()
	for {
		line, err := reader.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var input Input
			decoder := json.NewDecoder(bytes.NewReader(line))
			decoder.UseNumber()
			if derr := decoder.Decode(&input); derr != nil {
				writeJSON(map[string]string{"error": "not an input document: " + derr.Error()})
			} else {
				writeJSON(evaluate(registry, &input))
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fail(1, "cel: "+err.Error())
		}
	}
}

func readInput(r io.Reader) *Input {
	var input Input
	decoder := json.NewDecoder(r)
	decoder.UseNumber()
	if err := decoder.Decode(&input); err != nil {
		fail(2, "cel: stdin is not the input document: "+err.Error())
	}
	return &input
}

func writeJSON(value any) {
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(value); err != nil {
		fail(1, "cel: "+err.Error())
	}
}

func fail(code int, message string) {
	fmt.Fprintln(os.Stderr, message)
	os.Exit(code)
}
