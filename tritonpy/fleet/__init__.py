"""Many tritonservers serving one repository: a client that fails over between replicas, and a
rolling update of models through the repository API."""
