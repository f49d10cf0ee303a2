// compose-config: loads docker-compose.yml with compose-go, the library `docker compose config` runs, and exits
// non-zero on anything it refuses (schema, interpolation, anchors, references between services, secrets, configs).
// Usage: go run . <compose file> (the variables come from the environment; CI passes the ones the file requires).
// Prints the services it loaded, one per line.
package main

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: compose-config <compose file>")
		os.Exit(2)
	}
	options, err := cli.NewProjectOptions([]string{os.Args[1]}, cli.WithOsEnv, cli.WithName("payments"), cli.WithResolvedPaths(true))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	project, err := options.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	names := project.ServiceNames()
	sort.Strings(names)
	for _, name := range names {
		fmt.Println(name)
	}
}
