package embed

// Cosine is cosine, for the package's external tests.
var Cosine = cosine
