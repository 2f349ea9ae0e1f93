package sim

// The tests run pipelines and placement policies built by name.
import _ "github.com/optd/optd/policy/builtin"
