// Package notebook holds whyslow.ipynb, a Jupyter notebook for the
// gophernotes Go kernel that walks through a diagnosis step by step: load
// evidence, compare fleet and per-pod quantiles, run the decision map
// (facts → rules.Symptoms → rules.Evaluate → findings).
//
// The package has no code. Its test compiles the notebook's code cells
// into one Go program and runs it, so that the notebook stays correct:
//
//	go test ./examples/notebook           # run the notebook as a program
//	go test ./examples/notebook -update   # also store its output in the notebook
//
// TestNotebookKernel executes the notebook in a real gophernotes kernel
// built by ../shared/tools/gophernotes/build-kernel.sh and compares every
// cell's output with the stored one (see examples/README.md).
//
// The program is made as gophernotes would run the cells, in order, in one
// interpreter session:
//
//   - import declarations of every cell are hoisted into one import block
//     (an import no cell uses is kept as a blank import);
//   - a cell made only of declarations (func, type, var, const) goes to
//     package level; any other cell is a list of statements, placed in
//     main after the cells before it;
//   - when a cell ends with a bare expression, its value is printed as the
//     notebook shows it: fmt.Sprint of each value, separated by spaces
//     (the results of a final call are printed too, unless it has none);
//   - variables a cell declares but no later cell uses are used with
//     "_ = name", which the compiler would otherwise reject.
//
// The program is written to a temporary directory _run-* inside this
// package's directory (ignored by the go command's ./... patterns and by
// git), built within the repository's module so that it needs no network,
// and removed at once; the binary runs with this directory as its working
// directory, as Jupyter runs a notebook's kernel, so that relative paths in
// the cells resolve as they do in the notebook.
package notebook
