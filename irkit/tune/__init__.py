"""Schedule search (issue 17 builds the tuner here): so far, the search space of a document."""
