package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/internal/inputkind"
)

// CheckInputKind refuses the file at path, given with --flag, when it is
// recognizably another of optd's formats than want (a placement scenario
// given to simulate, an output given as an input), naming what it is and the
// verb it belongs to. A file it cannot read or recognize is left to the
// verb's decoder, whose error is more precise.
func CheckInputKind(flag, path, want string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	if err := inputkind.Check(data, want); err != nil {
		return fmt.Errorf("--%s %s: %w", flag, path, err)
	}
	return nil
}

// UserMessage is the one line the command line prints for err: its message
// without the package names of the library's sentinel errors, which tell a
// Go caller where an error comes from but tell a user nothing (the field
// path, value and limit do). A *UsageError is printed as it is.
func UserMessage(err error) string {
	msg := oneLine(err.Error())
	var ue *UsageError
	if errors.As(err, &ue) {
		return msg
	}
	return errkind.UserText(msg)
}
