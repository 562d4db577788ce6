"""Text: analysis (tokens, stopwords, stemming) and chunking."""
