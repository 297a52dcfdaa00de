"""One module per outside system; each translates that system's errors into ours."""
