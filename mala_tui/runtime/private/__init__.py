"""What is kept private: files only their user may read, secrets kept out of
everything written or printed."""
