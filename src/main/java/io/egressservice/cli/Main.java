package io.egressservice.cli;

public final class Main {
  public static void main(String[] args) {
    System.out.println(org.ovn.k8s.v1.EgressService.class);
  }
}
