package benchmarks

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// table builds a Markdown table.
type table struct {
	head []string
	rows [][]string
}

func newTable(head ...string) *table { return &table{head: head} }

// add appends a row; cells are formatted with %v, floats with num.
func (t *table) add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		switch v := c.(type) {
		case float64:
			row[i] = num(v)
		case string:
			row[i] = v
		default:
			row[i] = fmt.Sprint(v)
		}
	}
	t.rows = append(t.rows, row)
}

func (t *table) String() string {
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	line(t.head)
	sep := make([]string, len(t.head))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	return b.String()
}

// joinEach formats each of xs with format and joins them with sep.
func joinEach[T any](xs []T, format func(T) string, sep string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = format(x)
	}
	return strings.Join(parts, sep)
}

// num formats a figure with 4 significant digits (integers in full).
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case v == math.Trunc(v) && math.Abs(v) < 1e12:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// ci formats a mean and the half-width of its 95% confidence interval.
func ci(mean, half float64) string {
	if math.IsNaN(half) {
		return num(mean)
	}
	return num(mean) + " ± " + strconv.FormatFloat(half, 'g', 2, 64)
}

// pct formats a fraction as a percentage with one decimal.
func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }

// ms formats seconds as milliseconds with 3 significant digits.
func ms(sec float64) string { return strconv.FormatFloat(1000*sec, 'g', 3, 64) + " ms" }
