"""Optional rerankers that reorder search's fused candidates (``http.HttpReranker``)."""
