package io.egressservice.testing;

import java.util.Arrays;
import java.util.List;

/** The elements of a set as {@code nft list set} prints them (concatenations too, over several lines), sorted. */
public final class NftSetListing {
  private NftSetListing() {}

  public static List<String> elements(String listing) {
    int start = listing.indexOf("elements = {");
    if (start < 0) {
      return List.of();
    }
    int end = listing.indexOf('}', start);
    return Arrays.stream(listing.substring(start + "elements = {".length(), end).split(","))
        .map(e -> e.strip().replaceAll("\\s+", " ")).filter(e -> !e.isEmpty()).sorted().toList();
  }
}
