"""The index pass: pending episodes -> chunks -> vectors, and the work beside it."""
