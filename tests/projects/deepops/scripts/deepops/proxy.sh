# edit the proxy details
#
# export http_proxy="http://10.0.2.5:3128"
# export https_proxy="http://10.0.2.5:3128"
# export no_proxy="localhost,cluster.local,127.0.0.1,::1,10.0.2.10,10.0.2.20,10.0.2.30"
