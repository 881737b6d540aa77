// Placeholder until its owner lands the implementation.
