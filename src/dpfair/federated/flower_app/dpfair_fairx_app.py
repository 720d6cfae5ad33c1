"""The Flower components of dpfair's federated FairX learners (see dpfair.federated.apps)."""

from dpfair.federated import make_client_app, make_server_app

server_app = make_server_app()
client_app = make_client_app()
