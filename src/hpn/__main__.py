from hpn.cli import main

main()
