// Package html writes a whyslow report as one self-contained HTML page with
// its timelines drawn as inline SVG (gonum.org/v1/plot): Write(w, rep). It
// renders report's Document, the model the text and Markdown writers use,
// and decides nothing. It is a package of its own so that a program that
// only diagnoses, or writes text, Markdown or JSON, does not link the
// plotting packages; nothing in the library imports it.
package html
