"""Model repositories in object storage (``s3://``): Triton's URL forms, publishing an exported
repository to a bucket, and local copies for the tools that read files."""
